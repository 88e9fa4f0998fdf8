import ArgumentParser
import DeviceStore
import Foundation
import IndexModel
import IndexQuery

struct GrepCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "grep",
        abstract: "Print the journal events a query matches, or the whole history of one identifier.",
        discussion: """
            The query language is the one `device query` speaks (docs/QUERY.md), over events:
            kind, seq, epoch, call, time, device, index, id, domain, cause, batch, clientState,
            related, and the attributes an event carries. Examples:
              sightline journal grep --db D 'kind == "itemDeleted" && id == "42"'
              sightline journal grep --db D 'time > $time.today && title == "*paris*"cd'
              sightline journal grep --db D --explain 42
            On a damaged store it prints what it can read, then says where it stopped (exit status 1).
            """
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var clockOption: ClockOption
    @OptionGroup var output: JSONOption
    @OptionGroup var budget: QueryBudgetOption

    @Option(name: .long, help: ArgumentHelp("Print the history of this item identifier, activity key or result reference.",
                                            valueName: "id"))
    var explain: String?

    @Option(name: [.customShort("n"), .long], help: "Stop after this many matching events (1…10000000).")
    var limit: Int?

    @Argument(help: ArgumentHelp("The query; without one every event matches.", valueName: "query"))
    var query: String?

    func validate() throws {
        if explain != nil && query != nil {
            throw ValidationError("give either a query or --explain, not both")
        }
        if let limit, !(1...10_000_000).contains(limit) {
            throw ValidationError("--limit must be between 1 and 10000000")
        }
    }

    func run() throws {
        if CloudJournal.isCloudStore(store.db) {
            guard explain == nil else {
                Output.error("error: \(store.db) is a cloud store; --explain reads a device journal (sightline trace follows an entry through the cloud)")
                throw ExitStatus.invalidInput
            }
            return try CloudJournal.grep(store.db, query: query, limit: limit, budget: budget.make(), json: output.json)
        }
        let expression = try query.map(QueryCommand.parse)
        let clock = clockOption.makeClock()
        let device = try store.openReadOnly(clock: clock)
        try clockOption.catchUp(clock, with: device)
        if let query { try GrepCommand.checkFields(query, in: device) }
        if let explain {
            try printHistory(of: explain, in: device)
            return
        }
        let compiled = expression.map { CompiledQuery($0, now: clock.now()) }
        let budget = budget.make()
        var matches: [JSONValue] = []
        var count = 0
        let result: JournalEntryScan
        do {
            result = try device.scanEntries { entry in
                if let compiled, try !compiled.matches(entry, budget: budget) { return true }
                count += 1
                if output.json {
                    matches.append(GrepCommand.json(entry, app: device.app))
                } else {
                    Output.line(RecordFormat.line(entry.record) + GrepCommand.batchSuffix(entry.batch))
                }
                return limit.map { count < $0 } ?? true
            }
        } catch {
            // A scan stops with the error its body threw.
            if let stop = budget.exhaustion { throw stop.exit() }
            throw error.exit()
        }
        if output.json {
            var object: JSONObject = ["events": .array(matches)]
            if let compiled { object["query"] = .string(compiled.expression.description) }
            if !result.undecodable.isEmpty {
                object["undecodable"] = .array(result.undecodable.map { .integer(Int64($0.rawValue)) })
            }
            Output.json(.object(object))
        }
        try GrepCommand.finish(result)
    }

    private func printHistory(of identifier: String, in device: DeviceStore) throws {
        let history: IdentifierHistory
        do {
            history = try device.history(of: identifier)
        } catch {
            throw error.exit()
        }
        if output.json {
            Output.json(.object([
                "id": .string(identifier),
                "device": .string(device.deviceID.rawValue),
                "history": .array(history.steps.map { step in
                    guard case .object(var object) = GrepCommand.json(step.entry, app: device.app) else { return .null }
                    object["change"] = .string(GrepCommand.describe(step.change))
                    return .object(object)
                }),
            ]))
        } else if history.steps.isEmpty {
            Output.line("the journal never mentions \(identifier)")
        } else {
            var rows = [["seq", "epoch", "time", "call", "event", "index", "what"]]
            for step in history.steps {
                let entry = step.entry
                var call = String(entry.record.call.rawValue)
                if let batch = entry.batch {
                    call += " (batch, client state \(Data(batch.clientState).base64EncodedString()))"
                }
                rows.append([String(entry.record.seq.rawValue), entry.record.epoch.description,
                             entry.record.time.description, call, entry.event.kind.name,
                             entry.event.indexName ?? "-",
                             GrepCommand.describe(step.change) + (entry.record.isPurged ? " (payload purged)" : "")])
            }
            Output.table(rows)
        }
        try GrepCommand.finish(history.scan)
    }

    /// A field no event of the journal answers to is a misspelling, not a
    /// query that matches nothing: names other than the journal's fields and
    /// the standard attributes are looked for among the custom attributes the
    /// journal's events carry (read only then, and only until each is found),
    /// and the first found nowhere is an error with a caret (exit 2).
    static func checkFields(_ query: String, in store: DeviceStore) throws {
        let known = JournalEntry.fieldNames + AttributeKey.standard.map(\.name)
        let unknown = QueryParser.attributeNames(in: query).filter { !known.contains($0.name) }
        guard !unknown.isEmpty else { return }
        var missing = Set(unknown.map(\.name))
        // The custom names met, for a suggestion: the scan reads the whole
        // journal when a name is missing (a few thousand names at most kept).
        var carried = Set<String>()
        _ = try? store.scanEntries { entry in
            let names = entry.carriedAttributeNames
            missing.subtract(names)
            if carried.count < 4_096 { carried.formUnion(names) }
            return !missing.isEmpty
        }
        guard let first = unknown.first(where: { missing.contains($0.name) }) else { return }
        throw refuseField(first, in: query, among: known + carried.subtracting(known).sorted(), noSubject: "no event in this journal",
                          fields: "\(JournalEntry.fieldNames.joined(separator: ", ")), and the attributes events carry")
    }

    /// Prints a query's unknown field with a caret under it, the nearest of
    /// `candidates` and the fields there are (`noSubject` says what has no
    /// such field), and returns the exit status for it (2).
    static func refuseField(_ field: (name: String, offset: Int), in query: String, among candidates: [String], noSubject: String,
                            fields: String) -> ExitCode {
        let suggestion = closest(to: field.name, among: candidates).map { "; did you mean \(TextRule.printable($0))?" } ?? ""
        Output.error(QueryError(at: field.offset, """
            \(noSubject) has a field \(TextRule.printable(field.name))\(suggestion) (fields: \(fields))
            """).rendered(query: query))
        return ExitStatus.invalidInput
    }

    /// The name within two edits of `name` (the fewest, first on a tie), if
    /// any, counting two neighbours swapped as one edit; a name longer than
    /// 64 characters is no one's misspelling.
    static func closest(to name: String, among names: [String]) -> String? {
        let target = Array(name.lowercased())
        guard target.count <= 64 else { return nil }
        var best: (name: String, distance: Int)?
        for candidate in names {
            let other = Array(candidate.lowercased())
            var before = [Int](repeating: 0, count: other.count + 1)
            var previous = Array(0...other.count)
            for i in target.indices {
                var current = [i + 1]
                for j in other.indices {
                    var cost = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (target[i] == other[j] ? 0 : 1))
                    if i > 0, j > 0, target[i] == other[j - 1], target[i - 1] == other[j] { cost = min(cost, before[j - 1] + 1) }
                    current.append(cost)
                }
                before = previous
                previous = current
            }
            let distance = previous[other.count]
            if distance <= 2, distance < (best?.distance ?? Int.max) { best = (candidate, distance) }
        }
        return best?.name
    }

    /// Says on stderr what the output is missing, and fails when it is partial.
    private static func finish(_ result: JournalEntryScan) throws {
        if !result.undecodable.isEmpty {
            Output.error("skipped \(result.undecodable.count) undecodable event(s) at seq \(Output.list(result.undecodable.map(\.description)))")
        }
        if RecordFormat.reportStop(result.scan) || !result.undecodable.isEmpty { throw ExitStatus.checkFailed }
    }

    static func json(_ entry: JournalEntry, app: AppID? = nil) -> JSONValue {
        guard case .object(var object) = RecordFormat.json(entry.record, app: app) else { return .null }
        if let batch = entry.batch {
            object["batch"] = .object([
                "call": .integer(Int64(batch.call.rawValue)), "index": .string(batch.index),
                "clientState": .string(Data(batch.clientState).base64EncodedString()),
            ])
        }
        return .object(object)
    }

    static func batchSuffix(_ batch: JournalBatch?) -> String {
        guard let batch else { return "" }
        return "  (batch \(batch.index), client state \(Data(batch.clientState).base64EncodedString()))"
    }

    static func describe(_ change: IdentifierHistory.Change) -> String {
        func cause(_ cause: DeletionCause) -> String {
            switch cause {
            case .identifier: "by identifier"
            case .domain(let domain): "with domain \(domain)"
            case .all: "by delete-all"
            }
        }
        switch change {
        case .created: return "created"
        case .replaced: return "replaced"
        case .updated(let names): return names.isEmpty ? "updated (no changes)" : "updated " + names.joined(separator: ", ")
        case .deleted(let how): return "deleted " + cause(how)
        case .expired: return "expired"
        case .activityRecorded(let key, let relation):
            switch relation {
            case .key: return "activity became current"
            case .related: return "activity \(key) (related) became current"
            case .weaklyRelated: return "activity \(key) (weakly related) became current"
            }
        case .activityDeleted(let how): return "activity deleted " + cause(how)
        case .activityExpired: return "activity expired"
        case .shown: return "shown as a result"
        case .engaged: return "engaged with"
        }
    }
}
