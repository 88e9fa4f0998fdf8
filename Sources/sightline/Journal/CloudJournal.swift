import CloudCore
import CloudPostgres
import CloudSQLite
import Foundation
import IndexModel
import IndexQuery
import SQLiteSupport
import SyncWire

/// `journal verify | stats | export` on a cloud store: the cloud log instead of
/// a device's event journal. A cloud store is a SQLite file or a PostgreSQL
/// URL, whose password comes from the environment (`PostgresOptions.password`).
enum CloudJournal {
    /// Whether `db` names a cloud store: a PostgreSQL URL, or a SQLite file
    /// with a cloud store's tables.
    static func isCloudStore(_ db: String) -> Bool {
        PostgresLocation.isPostgresURL(db) || CloudIndex.isCloudStore(at: db)
    }

    static func open(_ db: String) throws -> any CloudStore {
        try CloudStoreOption.open(db, postgres: PostgresSettings(), options: CloudOptions(readOnly: true))
    }

    static func json(_ record: CloudLogRecord) -> JSONValue {
        var object: JSONObject = [
            "app": .string(record.app.rawValue),
            "seq": .integer(record.seq),
            "device": .string(record.device.rawValue),
            "epoch": .integer(Int64(clamping: record.epoch.rawValue)),
            "firstSeq": .integer(Int64(clamping: record.firstSeq.rawValue)),
            "lastSeq": .integer(Int64(clamping: record.lastSeq.rawValue)),
            "acceptedFrom": .integer(Int64(clamping: record.acceptedFrom.rawValue)),
            "receivedAt": .string(record.receivedAt.description),
            "messages": .array(zip(sequence(first: record.firstSeq) { $0.next }, record.messages).map { seq, message in
                guard case .object(var object) = message.jsonValue else { return message.jsonValue }
                object["seq"] = .integer(Int64(clamping: seq.rawValue))
                return .object(object)
            }),
            "hash": .string(RowDigest.hex(record.hash)),
        ]
        if record.isPurged { object["purged"] = .bool(true) }
        return .object(object)
    }

    static func verify(_ path: String, json: Bool) throws {
        let cloud = try open(path)
        let verification: CloudLogVerification
        var digests: (stored: String, rebuilt: String)?
        do {
            verification = try cloud.verifyLog()
            if verification.isValid {
                digests = (try cloud.projectionDigest(), try cloud.rebuiltProjectionDigest())
            }
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        }
        let projectionsEqual = digests.map { $0.stored == $0.rebuilt } ?? false
        let valid = verification.isValid && projectionsEqual
        if json {
            var object: JSONObject = [
                "store": .string("cloud"),
                "valid": .bool(valid),
                "verifiedRows": .integer(Int64(verification.verifiedRows)),
                "messages": .integer(Int64(verification.messages)),
            ]
            if let problem = verification.firstProblem { object["problem"] = .string(problem) }
            if let digests {
                object["projectionDigest"] = .string(digests.stored)
                object["rebuiltDigest"] = .string(digests.rebuilt)
            }
            Output.json(.object(object))
        } else if valid {
            Output.line("ok: cloud log of \(verification.verifiedRows) rows and \(verification.messages) messages verified; projections equal a rebuild")
        }
        if let problem = verification.firstProblem {
            Output.error("verify failed: \(problem)")
            throw ExitStatus.checkFailed
        }
        if !projectionsEqual {
            Output.error("verify failed: the cloud projections differ from a rebuild of the cloud log")
            throw ExitStatus.checkFailed
        }
    }

    static func stats(_ path: String, json: Bool) throws {
        let cloud = try open(path)
        var byKind: [String: Int] = [:]
        var rows = 0
        var devices = Set<DeviceStream>()
        var first: Timestamp?
        var last: Timestamp?
        do {
            try cloud.scanLog { record in
                rows += 1
                devices.insert(DeviceStream(app: record.app, device: record.device))
                if first == nil { first = record.receivedAt }
                last = record.receivedAt
                for message in record.messages.dropFirst(record.firstSeq.count(before: record.acceptedFrom)) {
                    byKind[message.kindName, default: 0] += 1
                }
                return true
            }
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.checkFailed
        }
        let messages = byKind.values.reduce(0, +)
        // Each device's position in the cloud: per epoch, the last seq it holds.
        var positions: [(app: AppID, device: DeviceID, epochs: [(epoch: Epoch, through: OutboxSeq)])] = []
        do {
            for app in Set(devices.map(\.app)).sorted(by: { $0.rawValue < $1.rawValue }) {
                for (device, held) in try cloud.heldEpochsByDevice(app: app).sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                    positions.append((app, device, held.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))
                }
            }
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.checkFailed
        }
        if json {
            var kinds = JSONObject()
            for (kind, count) in byKind.sorted(by: { $0.key < $1.key }) { kinds[kind] = .integer(Int64(count)) }
            var object: JSONObject = [
                "store": .string("cloud"),
                "logRows": .integer(Int64(rows)),
                "messages": .integer(Int64(messages)),
                "devices": .integer(Int64(devices.count)),
                "byKind": .object(kinds),
            ]
            if let first { object["firstReceived"] = .string(first.description) }
            if let last { object["lastReceived"] = .string(last.description) }
            object["devicePositions"] = .array(positions.map { position in
                .object([
                    "app": .string(position.app.rawValue), "device": .string(position.device.rawValue),
                    "epochs": .array(position.epochs.map { held in
                        .object(["epoch": .integer(Int64(clamping: held.epoch.rawValue)),
                                 "through": .integer(Int64(clamping: held.through.rawValue))])
                    }),
                ])
            })
            Output.json(.object(object))
        } else {
            var table = [["store", "cloud"], ["log rows", String(rows)], ["messages", String(messages)],
                         ["devices", String(devices.count)], ["first received", first?.description ?? "-"],
                         ["last received", last?.description ?? "-"]]
            for (kind, count) in byKind.sorted(by: { $0.key < $1.key }) { table.append(["  " + kind, String(count)]) }
            // Positions of the first devices; --json lists every one.
            let shown = 50
            for position in positions.prefix(shown) {
                table.append(["device " + TextRule.printable(position.device.rawValue),
                              position.epochs.map { "epoch \($0.epoch) through \($0.through)" }.joined(separator: ", ")])
            }
            if positions.count > shown { table.append(["", "and \(positions.count - shown) more devices (--json lists every one)"]) }
            Output.table(table)
        }
    }

    static func export(_ path: String, app: AppID?, from: UInt64, to: UInt64?, json asDocument: Bool = false) throws {
        let cloud = try open(path)
        let last = to ?? UInt64.max
        var document = asDocument ? Output.JSONArrayStream(name: "rows") : nil
        do {
            try cloud.scanLog(app: app, from: Int64(clamping: max(from, 1))) { record in
                if UInt64(record.seq) <= last {
                    if document != nil { document!.element(json(record)) } else { Output.line(JSONWriter.compact(json(record))) }
                }
                // Past --to of one app, the next app's rows may follow.
                return app == nil || UInt64(record.seq) < last
            }
        } catch {
            document?.end()
            Output.error("stopped: \(error.message)")
            throw ExitStatus.checkFailed
        }
        document?.end()
    }

    /// `journal grep` on a cloud store: each message of the log a query
    /// matches (`CloudMessageSubject`), in log order, each app's in turn; a
    /// field no message has is an error with a caret (exit 2).
    static func grep(_ path: String, query: String?, limit: Int?, budget: QueryBudget, json: Bool) throws {
        let expression = try query.map(QueryCommand.parse)
        if let query {
            let known = CloudMessageSubject.rowFieldNames + CloudMessageSubject.messageFieldNames
            if let unknown = QueryParser.attributeNames(in: query).first(where: { !known.contains($0.name) }) {
                throw GrepCommand.refuseField(unknown, in: query, among: known, noSubject: "no message of a cloud log",
                                              fields: "\(CloudMessageSubject.rowFieldNames.joined(separator: ", ")), and each kind's own")
            }
        }
        let cloud = try open(path)
        let compiled = expression.map { CompiledQuery($0, now: cloud.now) }
        var document = json ? Output.JSONArrayStream(name: "messages") : nil
        var count = 0
        do {
            try cloud.scanLog { record in
                var seq = record.firstSeq
                for message in record.messages {
                    defer { seq = seq.next }
                    let subject = CloudMessageSubject(record: record, seq: seq, message: message)
                    if let compiled, try !compiled.matches(subject, budget: budget) { continue }
                    count += 1
                    if document != nil { document!.element(subject.jsonValue) } else { Output.line(subject.line) }
                    if let limit, count >= limit { return false }
                }
                return true
            }
        } catch {
            document?.end()
            if let stop = budget.exhaustion { throw stop.exit() }
            Output.error("stopped: \(error.commandLineMessage)")
            throw ExitStatus.checkFailed
        }
        document?.end()
    }

    /// For the journal commands that only read device journals.
    static func refuse(_ command: String, _ path: String) throws {
        guard isCloudStore(path) else { return }
        Output.error("error: \(path) is a cloud store; journal \(command) reads device journals (verify, stats, export, tail and grep read the cloud log)")
        throw ExitStatus.invalidInput
    }

    /// The last `count` rows of each app's log, each app's in order: one line
    /// per row (app, seq, device, epoch, its seqs, when it came, its
    /// messages by kind), or `--json`'s `rows` in `export`'s shape.
    static func tail(_ path: String, count: Int, json: Bool, lines: Bool = false) throws {
        let cloud = try open(path)
        var windows: [AppID: [CloudLogRecord]] = [:]
        do {
            try cloud.scanLog { record in
                windows[record.app, default: []].append(record)
                // Amortized: the window is cut back once it holds twice what is kept.
                if windows[record.app]!.count >= 2 * count { windows[record.app]!.removeFirst(count) }
                return true
            }
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.checkFailed
        }
        let rows = windows.keys.sorted { $0.rawValue < $1.rawValue }.flatMap { windows[$0]!.suffix(count) }
        if json {
            Output.json(.object(["rows": .array(rows.map(Self.json))]))
            return
        }
        for row in rows { Output.line(lines ? JSONWriter.compact(Self.json(row)) : line(row)) }
    }

    /// `tail --follow` on a cloud store: each row appended to any app's log
    /// after the rows printed, as it comes, until interrupted; `json` prints
    /// each as one JSON object a line.
    static func follow(_ path: String, json: Bool, interval: Double) throws {
        let cloud = try open(path)
        var printed: [AppID: Int64] = [:]
        do {
            for head in try cloud.logHeads() { printed[head.app] = Int64(head.rows) }
            while true {
                Thread.sleep(forTimeInterval: interval)
                for head in try cloud.logHeads() where Int64(head.rows) > printed[head.app] ?? 0 {
                    try cloud.scanLog(app: head.app, from: (printed[head.app] ?? 0) + 1) { record in
                        Output.line(json ? JSONWriter.compact(Self.json(record)) : line(record))
                        printed[head.app] = record.seq
                        return true
                    }
                }
            }
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.checkFailed
        }
    }

    /// One row of the log as `tail` prints it.
    private static func line(_ row: CloudLogRecord) -> String {
        var kinds: [String: Int] = [:]
        for message in row.messages.dropFirst(row.firstSeq.count(before: row.acceptedFrom)) { kinds[message.kindName, default: 0] += 1 }
        let counted = kinds.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        return "app \(TextRule.printable(row.app.rawValue))  seq \(row.seq)  device \(TextRule.printable(row.device.rawValue))  "
            + "epoch \(row.epoch)  seqs \(row.firstSeq)…\(row.lastSeq)  \(row.receivedAt)  "
            + (counted.isEmpty ? "no new message" : counted) + (row.isPurged ? "  (content purged)" : "")
    }
}
