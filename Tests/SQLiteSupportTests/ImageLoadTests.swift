import GRDB
import SQLiteSupport
import Testing

@Suite struct ImageLoadTests {
    private static func memoryQueue() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA page_size = 1024") }
        return try DatabaseQueue(configuration: configuration)
    }

    /// A database loaded from its image is the same database, byte for
    /// byte, its schema cookie and change counters included, and takes
    /// writes as the original would: a store woken from sleep must write
    /// the same backups as one that never slept.
    @Test func anImageLoadsIntoTheSameBytesAndTakesTheSameWrites() throws {
        let original = try ImageLoadTests.memoryQueue()
        try original.write { db in
            try db.execute(sql: """
                CREATE TABLE journal (seq INTEGER PRIMARY KEY, payload BLOB);
                CREATE INDEX journal_by_payload ON journal (payload);
                CREATE TABLE outbox (seq INTEGER PRIMARY KEY, message TEXT);
                """)
            for n in 0..<200 { try db.execute(sql: "INSERT INTO journal (payload) VALUES (randomblob(\(n % 40)))") }
        }
        let image = try original.serializedFromSnapshot { _ in }.image
        let loaded = try ImageLoadTests.memoryQueue()
        try loaded.load(image: image)
        #expect(try loaded.serializedFromSnapshot { _ in }.image == image)
        for queue in [original, loaded] {
            try queue.write { db in try db.execute(sql: "INSERT INTO outbox (message) SELECT hex(payload) FROM journal WHERE seq % 7 = 0") }
        }
        #expect(try loaded.serializedFromSnapshot { _ in }.image == original.serializedFromSnapshot { _ in }.image)
    }

    /// Bytes too short for a database header, or that are no database,
    /// are refused with an error, not loaded.
    @Test(arguments: [[UInt8](), [UInt8](repeating: 0, count: 99), [UInt8](repeating: 0x41, count: 4096)])
    func bytesThatAreNoDatabaseAreRefused(image: [UInt8]) throws {
        let queue = try ImageLoadTests.memoryQueue()
        #expect(throws: DatabaseError.self) {
            try queue.load(image: image)
            // SQLite may take the bytes and fail only when it reads them.
            _ = try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
        }
    }
}
