import ArgumentParser
import DeviceStore
import Foundation
import IndexModel

struct ReindexCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reindex",
        abstract: "Play the app for the store's pending reindex requests, from the app's operations file.",
        discussion: """
            For each pending request (journaled by a restore, or asked for by the cloud), \
            re-applies from --from the operations of that index that the store lacks: those \
            after the last batch whose client state is the index's fetchLastClientState, or \
            all of them when the index has none, then journals the acknowledgement. \
            Re-applying is idempotent: indexing replaces, deleting what is gone does nothing.
            """
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var clockOption: ClockOption
    @OptionGroup var output: JSONOption

    @Option(name: .long, help: ArgumentHelp("The app's operations file (JSON Lines), as given to device apply.", valueName: "ops.jsonl"))
    var from: String

    func run() throws {
        let operations = try OperationsFile.read(from)
        let clock = clockOption.makeClock()
        guard FileManager.default.fileExists(atPath: store.db) else {
            Output.error("error: no store at \(store.db): check the path (reindex never creates a store)")
            throw ExitStatus.storeUnavailable
        }
        let device = try store.openForWriting(clock: clock)
        try clockOption.catchUp(clock, with: device)
        let pending: [ReindexRequest]
        do {
            pending = try device.pendingReindexRequests()
        } catch {
            throw error.exit()
        }
        let delegate = OperationsReplay(operations: operations)
        do {
            try device.processReindexRequests(with: delegate)
        } catch let error as DeviceStoreError {
            throw error.exit()
        }
        if output.json {
            Output.json(.object([
                "requests": .array(pending.map { request in
                    .object(["seq": .integer(Int64(request.seq.rawValue)), "index": .string(request.index),
                             "ids": request.identifiers.map { .array($0.map(JSONValue.string)) } ?? .null])
                }),
                "operationsApplied": .integer(Int64(delegate.applied.value)),
            ]))
        } else if pending.isEmpty {
            Output.line("no pending reindex requests")
        } else {
            for request in pending {
                Output.line("reindexed \(request.index)" + (request.identifiers.map { " (\($0.count) identifiers)" } ?? "")
                            + ", acknowledged request seq \(request.seq)")
            }
            Output.line("\(delegate.applied.value) operations re-applied")
        }
    }
}

/// An operations file, parsed whole (reindex needs to look back for batches).
enum OperationsFile {
    static func read(_ path: String) throws -> [AppOperation] {
        guard let data = FileManager.default.contents(atPath: path) else {
            Output.error("error: cannot read \(path)")
            throw ExitStatus.invalidInput
        }
        var operations: [AppOperation] = []
        for (offset, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard !line.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\r" }) else { continue }
            do {
                operations.append(try OperationParser.parse(line: String(line)))
            } catch {
                Output.error("line \(offset + 1): \(error.description)")
                throw ExitStatus.invalidInput
            }
        }
        return operations
    }
}

/// The app, replayed from its operations file.
final class OperationsReplay: ReindexDelegate {
    let operations: [AppOperation]
    let applied = Counter()

    final class Counter { var value = 0 }

    init(operations: [AppOperation]) {
        self.operations = operations
    }

    /// The operations of `index` after the last batch that committed the
    /// index's current client state (all of them when there is none).
    private func lacking(_ index: String, in store: DeviceStore) throws -> [AppOperation] {
        let ofIndex = operations.filter { $0.indexName == index }
        guard let state = try store.index(named: index).fetchLastClientState(),
              let last = ofIndex.lastIndex(where: { if case .batch(let batch) = $0 { batch.clientState == state } else { false } }) else {
            return ofIndex
        }
        return Array(ofIndex[(last + 1)...])
    }

    func reindexAll(index: String, in store: DeviceStore) throws {
        for operation in try lacking(index, in: store) {
            try store.perform(operation)
            applied.value += 1
        }
    }

    func reindexItems(index: String, identifiers: [String], in store: DeviceStore) throws {
        let wanted = Set(identifiers)
        for operation in operations where operation.indexName == index {
            guard case .index(let name, let items) = operation else { continue }
            let chosen = items.filter { wanted.contains($0.uniqueIdentifier) }
            guard !chosen.isEmpty else { continue }
            try store.perform(.index(index: name, items: chosen))
            applied.value += 1
        }
    }
}
