import ArgumentParser
import CloudCore
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel

struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Summarize a journal: head, epochs, events by kind, projections.",
        discussion: """
            On a damaged store it counts what it can read and says where it stopped (exit status 1). \
            On a cloud store it summarizes the cloud log: rows, messages by kind, devices.
            """
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var output: JSONOption

    func run() throws {
        if CloudJournal.isCloudStore(store.db) {
            return try CloudJournal.stats(store.db, json: output.json)
        }
        let device = try store.openReadOnly()
        var tally = JournalTally()
        let scan: JournalScan
        do {
            scan = try device.scanJournal { record in
                tally.add(record)
                return true
            }
        } catch {
            throw error.exit()
        }
        let projections = try? device.projectionCounts()
        // The sync cursor: what the outbox holds, what the cloud acknowledged
        // and made durable, and what waits to be sent.
        let sync = try? device.syncStatus()
        let fileBytes = (try? FileManager.default.attributesOfItem(atPath: store.db)[.size] as? Int) ?? nil

        if output.json {
            var object: JSONObject = [
                "device": .string(device.deviceID.rawValue),
                "events": .integer(Int64(tally.events)),
                "calls": .integer(Int64(tally.calls.count)),
                "epochs": tally.epochsJSON,
                "headSeq": .integer(Int64(scan.lastSeq?.rawValue ?? 0)),
            ]
            if let lastHash = tally.lastHash { object["headHash"] = .string(lastHash.hex) }
            if let first = tally.first { object["firstEventTime"] = .string(first.description) }
            if let last = tally.last { object["lastEventTime"] = .string(last.description) }
            object["byKind"] = .object(tally.byKindJSON)
            object["purgedEvents"] = .integer(Int64(tally.purged))
            if let projections {
                object["items"] = .integer(Int64(projections.items))
                object["activities"] = .integer(Int64(projections.activities))
                object["indexes"] = .array(projections.indexes.map(JSONValue.string))
                object["clientStates"] = .integer(Int64(projections.clientStates))
            }
            if let sync {
                object["sync"] = .object([
                    "outboxHead": .string(sync.head.description), "acknowledged": .string(sync.acknowledged.description),
                    "durable": .string(sync.durable.description), "pending": .integer(Int64(sync.pending)),
                ])
            }
            if let fileBytes { object["fileBytes"] = .integer(Int64(fileBytes)) }
            if let stop = scan.stop {
                object["complete"] = .bool(false)
                object["stoppedAfterSeq"] = .integer(Int64(scan.lastSeq?.rawValue ?? 0))
                object["stopReason"] = .string(stop.message)
            } else {
                object["complete"] = .bool(true)
            }
            Output.json(.object(object))
        } else {
            var rows = [
                ["device", device.deviceID.rawValue],
                ["events", String(tally.events)],
                ["calls", String(tally.calls.count)],
                ["epochs", tally.epochs.sorted().map(\.description).joined(separator: ", ")],
                ["head seq", String(scan.lastSeq?.rawValue ?? 0)],
                ["head hash", tally.lastHash?.hex ?? "-"],
                ["first event", tally.first?.description ?? "-"],
                ["last event", tally.last?.description ?? "-"],
            ]
            for (kind, count) in tally.byKind.sorted(by: { $0.key < $1.key }) { rows.append(["  " + kind, String(count)]) }
            rows.append(["purged events", String(tally.purged)])
            if let projections {
                rows.append(["items", String(projections.items)])
                rows.append(["activities", String(projections.activities)])
                rows.append(["indexes", projections.indexes.isEmpty ? "-" : projections.indexes.joined(separator: ", ")])
                rows.append(["client states", String(projections.clientStates)])
            }
            if let sync {
                rows.append(["outbox head", sync.head.description])
                rows.append(["acknowledged", sync.acknowledged.description])
                rows.append(["durable", sync.durable.description])
                rows.append(["pending", "\(sync.pending) message(s)"])
            }
            if let fileBytes { rows.append(["file bytes", String(fileBytes)]) }
            Output.table(rows)
        }
        if RecordFormat.reportStop(scan) { throw ExitStatus.checkFailed }
    }
}
