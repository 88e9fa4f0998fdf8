import CloudCore
import CloudPostgres
import CloudSQLite
import Crypto
import DeviceStore
import Foundation
import GRDB
import IndexModel
import PostgresTestSupport
import ScratchDirectory
import SyncWire
import Testing
import TextTestSupport

/// Text where it enters the cloud, on both backends: a name at enrolment or
/// in a frame, content in a frame. What a rule refuses (`TextRule`) is
/// refused there and changes nothing; what it admits is kept exactly. An
/// honest device whose journal an older build let a NUL into is not wedged,
/// and a SQLite cloud whose log an older build let one into verifies,
/// rebuilds and restores.
@Suite struct TextBoundaryTests {
    @Test(arguments: Backend.allCases)
    func aNameARuleRefusesIsRefusedAtEnrolmentAndEveryOtherNameIsKeptExactly(backend: Backend) throws {
        let harness = try SyncHarness(backend: backend)
        for (name, _) in HostileText.refusedByLines {
            let refused = try #require(throws: CloudError.self) {
                try harness.cloud.enrol(app: app, device: DeviceID(name), enrolmentSecret: enrolmentSecret, proof: nil)
            }
            #expect(refused.code == .invalidOption, "\(refused)")
            #expect(HostileText.isLine(refused.message), "\(refused)")
        }
        #expect(throws: CloudError.self) { try harness.cloud.registerApp(AppID("app\u{0}x"), enrolmentSecret: enrolmentSecret, maximumDevices: nil) }
        #expect(try harness.cloud.stats().devices == 0)

        let hash = PublicHash.of(app: app, activityType: "com.example.read", identity: "url:https://example.com/a")
        for (position, name) in HostileText.legalNames.enumerated() {
            let proof = [UInt8](repeating: UInt8(position + 1), count: 16)
            let key = try harness.cloud.enrol(app: app, device: DeviceID(name), enrolmentSecret: enrolmentSecret, proof: proof)
            #expect(try harness.cloud.enrol(app: app, device: DeviceID(name), enrolmentSecret: enrolmentSecret, proof: proof) == key,
                    "the same name and proof get the same key")
            let record = OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(1)), message: .vote(hash, token(1)))
            let frame = UploadFrame(app: app, device: DeviceID(name), records: [record], key: key)
            #expect(harness.deliver(frame.encoded).outcome == .accepted(messages: 1), "\(String(reflecting: name))")
        }
        let held = try harness.cloud.heldEpochsByDevice(app: app, device: nil)
        #expect(Set(held.keys.map(\.rawValue)) == Set(HostileText.legalNames))
        var logged: [String] = []
        try harness.cloud.scanLog(app: app, from: 1) { record in
            logged.append(record.device.rawValue)
            return true
        }
        #expect(logged == HostileText.legalNames)
        #expect(try harness.cloud.verifyLog().isValid)
    }

    /// Hostile names and content the rules admit, through enrolment, frames,
    /// votes and agreement: two voters reach K and both offer the content.
    static func storeAdmittedText(in harness: SyncHarness) throws {
        let url = "https://example.com/" + HostileText.legalNames[0]
        let hash = PublicHash.of(app: app, activityType: HostileText.legalNames[0], identity: "url:" + url)
        let text = HostileText.legalTexts[0]
        let content = PublicContent(activityType: HostileText.legalNames[0], title: text, keywords: HostileText.legalTexts,
                                    contentDescription: text, webpageURL: url)
        let voters = try HostileText.legalNames.prefix(2).enumerated().map { offset, name in
            let voter = try Attacker(harness, name: DeviceID(name))
            #expect(voter.send([.vote(hash, token(UInt8(offset + 1)))]) == .accepted(messages: 1))
            return voter
        }
        for voter in voters { #expect(voter.send([.content(hash, content)], from: 2) == .accepted(messages: 1)) }
        let entry = try harness.cloud.entry(app: app, hash: hash)
        #expect(entry?.content == content, "\(String(reflecting: entry))")
    }

    /// Every TEXT column of a SQLite cloud reads back as exactly its bytes
    /// (GRDB reads text as a C string) once hostile names and content the
    /// rules admit went through enrolment, frames, votes and agreement.
    @Test func everyTextColumnOfASQLiteCloudReadsBackItsBytes() throws {
        let directory = try ScratchDirectory.make("sightline-cloud-text")
        let path = directory.appendingPathComponent("cloud.sqlite").path
        do {
            let harness = try SyncHarness(threshold: 2, location: .file(path))
            try Self.storeAdmittedText(in: harness)
        }
        let columns = try StoredText.textColumns(path)
        #expect(columns.contains("cloud_log.device") && columns.contains("public_content.title"), "\(columns)")
        #expect(try StoredText.cutValues(path, columns).isEmpty)
    }

    /// The same on PostgreSQL: every text and text[] column of every table,
    /// read through the driver the cloud uses, is the UTF-8 the server
    /// holds (`convert_to`), so no codec between them changes a byte; and
    /// the hostile names and title are among the values, whole.
    @Test func everyTextColumnOfAPostgreSQLCloudReadsBackItsBytes() throws {
        let harness = try SyncHarness(threshold: 2, backend: .postgres)
        try Self.storeAdmittedText(in: harness)
        let database = try #require(harness.database)
        let pool = PostgresPool(location: database.location, password: database.password, size: 1)
        defer { pool.close() }
        try pool.withSession { session in
            let columns = try session.query("""
                SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns
                WHERE table_schema = current_schema() AND (data_type IN ('text', 'character varying') OR udt_name IN ('_text', '_varchar'))
                ORDER BY table_name, column_name
                """).map { row -> (table: String, column: String, array: Bool) in
                guard case .text(let table) = row.values[0], case .text(let column) = row.values[1], case .text(let type) = row.values[2] else {
                    throw HarnessError("information_schema answered \(row)")
                }
                return (table, column, type == "ARRAY")
            }
            let names = Set(columns.map { "\($0.table).\($0.column)" })
            #expect(names.contains("cloud_log.device") && names.contains("public_content.title"), "\(names)")
            var seen: Set<String> = []
            for (table, column, array) in columns {
                let sql = array
                    ? #"SELECT u, convert_to(u, 'UTF8') FROM "\#(table)", unnest("\#(table)"."\#(column)") AS u WHERE u IS NOT NULL"#
                    : #"SELECT "\#(column)", convert_to("\#(column)", 'UTF8') FROM "\#(table)" WHERE "\#(column)" IS NOT NULL"#
                for row in try session.query(sql) {
                    guard case .text(let read) = row.values[0], case .bytea(let bytes) = row.values[1] else {
                        Issue.record("\(table).\(column) answered \(row)")
                        continue
                    }
                    #expect(Array(read.utf8) == bytes, "\(table).\(column): \(String(reflecting: read))")
                    seen.insert(read)
                }
            }
            // Keywords are kept encoded (`PublicKeywords`), so the title stands for the texts.
            for text in HostileText.legalNames.prefix(2) + [HostileText.legalTexts[0]] {
                #expect(seen.contains(text), "\(String(reflecting: text)) is in no text column")
            }
        }
    }

    /// A frame whose content holds a NUL (or a control character in its
    /// type or URL) is malformed, whoever signed it: no backend could keep
    /// it exactly, and PostgreSQL would refuse the byte with an error that
    /// made the device send the frame again for good.
    @Test(arguments: Backend.allCases)
    func contentTextARuleRefusesIsAMalformedFrameAndChangesNothing(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 1, backend: backend)
        let attacker = try Attacker(harness)
        let url = "https://example.com/zero"
        let hash = PublicHash.of(app: app, activityType: "t", identity: "url:" + url)
        #expect(attacker.send([.vote(hash, token(1))]) == .accepted(messages: 1))
        let before = try harness.cloud.projectionDigest()
        let hostile = [
            PublicContent(activityType: "t", title: "Zero\u{0}Day", keywords: [], contentDescription: nil, webpageURL: url),
            PublicContent(activityType: "t", title: "Zero", keywords: ["a", "b\u{0}"], contentDescription: nil, webpageURL: url),
            PublicContent(activityType: "t", title: "Zero", keywords: [], contentDescription: "x\u{0}", webpageURL: url),
            PublicContent(activityType: "t\u{1B}", title: "Zero", keywords: [], contentDescription: nil, webpageURL: url),
        ]
        for content in hostile {
            guard case .rejected(let error) = attacker.send([.content(hash, content)], from: 2) else {
                Issue.record("content with \(content.textProblem ?? "?") was taken")
                continue
            }
            #expect(error.code == .malformed && error.message.contains("message 1 is content whose"), "\(error)")
        }
        #expect(try harness.cloud.projectionDigest() == before)
        // Text with tabs, line breaks and other controls is text: it is kept.
        let text = HostileText.legalTexts[0]
        let legal = PublicContent(activityType: "t", title: text, keywords: [text], contentDescription: text, webpageURL: url)
        #expect(attacker.send([.content(hash, legal)], from: 2) == .accepted(messages: 1))
        let entry = try #require(try harness.cloud.entry(app: app, hash: hash))
        #expect(entry.content == legal, "\(String(describing: entry.content))")
    }

    /// A device whose journal an older build wrote with a public activity
    /// titled `Baked\0Chips` (`Journal/fixtures/device-nul-title.sqlite`,
    /// written by the build before the text rule): its vote goes out, and
    /// the cloud's requests for that content are not journaled, so it never
    /// sends what a frame may not carry and is never wedged asking and
    /// answering; its projections still equal a rebuild, and its backups
    /// restore. An outbox message such a build queued leaves as a withheld
    /// answer. On both backends.
    @Test(arguments: Backend.allCases)
    func anHonestDeviceWhoseJournalHoldsANulTitleIsNotWedged(backend: Backend) throws {
        let harness = try SyncHarness(threshold: 2, backend: backend)
        let directory = try ScratchDirectory.make("sightline-nul-title")
        let path = directory.appendingPathComponent("older.sqlite").path
        try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent("device-nul-title.sqlite"),
                                         to: URL(fileURLWithPath: path))
        let older = try DeviceStore(at: .file(path), options: StoreOptions(clock: harness.clock))
        try older.setDeviceKey(harness.cloud.enrol(app: app, device: older.deviceID, enrolmentSecret: enrolmentSecret, proof: nil))
        let honestPath = directory.appendingPathComponent("honest.sqlite").path
        let honest = try DeviceStore(at: .file(honestPath), options: StoreOptions(clock: harness.clock, random: SeededRandom(seed: 7)))
        try honest.setDeviceKey(harness.cloud.enrol(app: app, device: honest.deviceID, enrolmentSecret: enrolmentSecret, proof: nil))
        try vote([honest])
        for _ in 0..<3 {
            for store in [older, honest] {
                for result in try harness.sync(store) {
                    if case .rejected(let error) = result.outcome { Issue.record("\(store.deviceID): \(error)") }
                }
            }
        }
        #expect(try harness.cloud.entry(app: app, hash: recipeHash())?.liveVotes == 2, "both votes count")
        let sent = try older.outboxEntries().map(\.message)
        #expect(!sent.contains { if case .content = $0 { true } else { false } }, "\(sent)")
        #expect(try older.syncStatus().pending == 0)
        #expect(try older.verifyJournal().isValid)
        #expect(try older.projectionDigest() == older.rebuiltProjectionDigest())
        let snapshot = directory.appendingPathComponent("older.slsnap").path
        try older.snapshot(to: snapshot)
        _ = try DeviceStore.restore(snapshot: snapshot, to: directory.appendingPathComponent("restored.sqlite").path)

        // An outbox an older build filled: a content message with a NUL, queued and not yet sent.
        let queued = try #require(try honest.outboxEntries().last)
        let withNUL = PublicContent(activityType: "com.yummly/browseRecipe", title: "Baked\u{0}Chips", keywords: ["potato"],
                                    contentDescription: nil, webpageURL: recipeURL)
        try DatabaseQueue(path: honestPath).write { db in
            try db.execute(sql: "INSERT INTO outbox (epoch, seq, journal_seq, message) VALUES (?, ?, ?, ?)",
                           arguments: [Int64(queued.position.epoch.rawValue), Int64(queued.position.seq.rawValue + 1),
                                       Int64(queued.journalSeq.rawValue), Data(OutboxMessage.content(recipeHash(), withNUL).encoded)])
        }
        let reopened = try DeviceStore(at: .file(honestPath), options: StoreOptions(clock: harness.clock))
        for result in try harness.sync(reopened) {
            if case .rejected(let error) = result.outcome { Issue.record("the queued message wedged the device: \(error)") }
        }
        #expect(try reopened.syncStatus().pending == 0)
    }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Journal/fixtures")

    /// A SQLite cloud an older build let a NUL into (a device enrolled as
    /// `nul\0a`, its registry row cut to `nul`, its log row exact): the log
    /// verifies, since names are read as their bytes; a rebuild folds that
    /// device's rows to nothing; and a snapshot restores.
    @Test func aSQLiteCloudWhoseLogHoldsANulNameVerifiesRebuildsAndRestores() throws {
        let directory = try ScratchDirectory.make("sightline-nul-log")
        let path = directory.appendingPathComponent("cloud.sqlite").path
        do {
            let harness = try SyncHarness(threshold: 1, location: .file(path))
            let hostile = try Attacker(harness, name: DeviceID("nulXa"))
            let hash = PublicHash.of(app: app, activityType: "t", identity: "url:https://example.com/n")
            #expect(hostile.send([.vote(hash, token(1))]) == .accepted(messages: 1))
            let honest = try harness.addDevice()
            try vote([honest])
            try harness.sync(honest)
        }
        try Self.writeAsAnOlderBuildDid(path, name: "nulXa", as: Array("nul".utf8) + [0] + Array("a".utf8))

        let cloud = try CloudIndex(at: .file(path), options: CloudOptions(threshold: 1))
        let verification = try cloud.verifyLog()
        #expect(verification.isValid, "\(verification.firstProblem ?? "")")
        var names: [[UInt8]] = []
        try cloud.scanLog(app: app, from: 1) { record in
            names.append(Array(record.device.rawValue.utf8))
            return true
        }
        #expect(names.first == Array("nul".utf8) + [0] + Array("a".utf8))
        try cloud.rebuildProjections()
        #expect(try cloud.projectionDigest() == cloud.rebuiltProjectionDigest())
        #expect(try cloud.entry(app: app, hash: recipeHash())?.liveVotes == 1, "the honest device's vote is folded")
        #expect(try cloud.entry(app: app, hash: PublicHash.of(app: app, activityType: "t", identity: "url:https://example.com/n")) == nil,
                "the row of a name no backend can key folds to nothing")

        let snapshot = directory.appendingPathComponent("cloud.slsnap").path
        try cloud.snapshot(to: snapshot)
        let restored = directory.appendingPathComponent("restored.sqlite").path
        try CloudIndex.restore(snapshot: snapshot, to: restored)
        #expect(try CloudIndex(at: .file(restored)).verifyLog().isValid)
        // PostgreSQL cannot hold the name: the restore is refused, and the database left empty.
        let database = try TestDatabase()
        let refused = try #require(throws: CloudError.self) {
            try PostgresCloud.restore(snapshot: snapshot, to: database.location, password: database.password)
        }
        #expect(refused.message.contains("log seq 1"), "\(refused)")
    }

    /// Rewrites `name` in the log of the SQLite cloud at `path` to the bytes
    /// `bytes` (which hold a NUL), chained anew, and the registry's rows of it
    /// to the bytes before the NUL, as a build that bound names as C strings
    /// but logged them exactly left them.
    static func writeAsAnOlderBuildDid(_ path: String, name: String, as bytes: [UInt8]) throws {
        let cut = Array(bytes.prefix { $0 != 0 })
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE cloud_log SET device = CAST(? AS TEXT) WHERE device = ?", arguments: [Data(bytes), name])
            for table in ["devices", "device_epochs"] {
                try db.execute(sql: "UPDATE \(table) SET device = CAST(? AS TEXT) WHERE device = ?", arguments: [Data(cut), name])
            }
            var previous = CloudLog.genesis
            let rows = try Row.fetchAll(db, sql: """
                SELECT seq, CAST(device AS BLOB), epoch, first_seq, last_seq, accepted_from, digest, received_at FROM cloud_log
                WHERE app = ? ORDER BY seq
                """, arguments: [app.rawValue])
            for row in rows {
                let device: Data = row[1]
                let epoch: Int64 = row[2]
                let first: Int64 = row[3]
                let last: Int64 = row[4]
                let accepted: Int64 = row[5]
                let digest: Data = row[6]
                let received: Int64 = row[7]
                let hash = CloudLog.chainHash(previous: previous, app: app, device: DeviceID(String(decoding: device, as: UTF8.self)),
                                              epoch: Epoch(UInt64(epoch)), firstSeq: OutboxSeq(UInt64(first)), lastSeq: OutboxSeq(UInt64(last)),
                                              acceptedFrom: OutboxSeq(UInt64(accepted)), digest: [UInt8](digest),
                                              receivedAt: Timestamp(millisecondsSince1970: received))
                try db.execute(sql: "UPDATE cloud_log SET prev_hash = ?, hash = ? WHERE app = ? AND seq = ?",
                               arguments: [Data(previous), Data(hash), app.rawValue, row[0] as Int64])
                previous = hash
            }
        }
    }
}
