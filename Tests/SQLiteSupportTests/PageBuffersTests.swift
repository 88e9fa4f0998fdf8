import Foundation
import GRDB
import GRDBSQLite
import SQLiteSupport
import Testing

@Suite struct PageBuffersTests {
    private func openBuffer() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.prepareDatabase { db in try PageBuffers.prepare(db, cachePages: 4) }
        return try DatabaseQueue(path: PageBuffers.path(), configuration: configuration)
    }

    /// A database of `rows` rows of `width` bytes each, all of `fill`, as a
    /// file's bytes: every image of the same `rows` and `width` has the
    /// same header, change counter and page count included.
    private func image(rows: Int, width: Int, fill: UInt8) throws -> [UInt8] {
        let queue = try openBuffer()
        try queue.write { db in
            try db.execute(sql: "PRAGMA page_size = 1024")
            try db.execute(sql: "CREATE TABLE t (n INTEGER PRIMARY KEY, v BLOB NOT NULL)")
        }
        try queue.write { db in
            for n in 0..<rows {
                try db.execute(sql: "INSERT INTO t VALUES (?, ?)", arguments: [n, Data(repeating: fill, count: width)])
            }
        }
        return try queue.inDatabase { db in try #require(PageBuffers.bytes(db)) }
    }

    /// The hazard a refill must close: SQLite keeps its page cache between
    /// transactions for as long as the 16 bytes at offset 24 of the file
    /// (change counter, page count, free list) stay as they were, and two
    /// databases can share them. Every image here has the same header, and
    /// a connection pointed from one to another in any order reads the
    /// new one's rows, sees its data version move, and writes into it
    /// without touching the others.
    @Test func aConnectionRefilledWithPagesOfTheSameHeaderReadsTheNewPagesNotItsCachedOnes() throws {
        let fills: [UInt8] = [1, 2, 3, 4]
        var images = try fills.map { try image(rows: 40, width: 100, fill: $0) }
        #expect(Set(images.map { Array($0[24..<40]) }).count == 1, "the images share the bytes SQLite checks for a change")
        let queue = try openBuffer()
        var random = SystemRandomNumberGenerator()
        for round in 0..<3 {
            for step in 0..<40 {
                let index = Int.random(in: 0..<images.count, using: &random)
                let version = try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA data_version") }
                try queue.inDatabase { db in try PageBuffers.refill(db, with: images[index]) }
                // As after another connection's commit: what keeps state
                // across transactions (FTS5's index structure) reads it again.
                #expect(try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA data_version") } != version)
                let read = try queue.read { db in
                    try [UInt8](Data.fetchAll(db, sql: "SELECT v FROM t WHERE n IN (0, 20, 39)").joined())
                }
                #expect(read == [UInt8](repeating: fills[index], count: 300), "round \(round), step \(step): image \(index) read as another's")
            }
            // One commit in each image, into the image the connection was
            // pointed at: their headers stay alike.
            for index in images.indices {
                try queue.inDatabase { db in try PageBuffers.refill(db, with: images[index]) }
                try queue.write { db in
                    try db.execute(sql: "UPDATE t SET v = ? WHERE n = ?", arguments: [Data(repeating: fills[index], count: 100), round])
                }
                images[index] = try queue.inDatabase { db in try #require(PageBuffers.bytes(db)) }
            }
            #expect(Set(images.map { Array($0[24..<40]) }).count == 1)
        }
        for (index, image) in images.enumerated() {
            try queue.inDatabase { db in try PageBuffers.refill(db, with: image) }
            #expect(try queue.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok", "image \(index)")
        }
    }

    /// A buffer holds what the file would: its bytes open as a database
    /// file, and `serializedFromSnapshot` gives them as they are.
    @Test func aBuffersBytesAreTheDatabaseFileAndItsSerializedImage() throws {
        let pages = try image(rows: 10, width: 50, fill: 7)
        let queue = try openBuffer()
        try queue.inDatabase { db in try PageBuffers.refill(db, with: pages) }
        #expect(try queue.serializedFromSnapshot { _ in }.image == pages)
        let copy = try DatabaseQueue()
        try copy.load(image: pages)
        #expect(try copy.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t") } == 10)
        #expect(PageBuffers.schemaCookie(of: pages) == 1, "one schema statement made the table")
    }

    @Test func aBufferIsRefilledOnlyBetweenTransactionsAndOnlyABufferIs() throws {
        let queue = try openBuffer()
        let pages = try image(rows: 1, width: 1, fill: 0)
        #expect(throws: DatabaseError.self) {
            try queue.writeWithoutTransaction { db in
                try db.inTransaction {
                    try PageBuffers.refill(db, with: pages)
                    return .commit
                }
            }
        }
        let memory = try DatabaseQueue()
        memory.inDatabase { db in #expect(PageBuffers.bytes(db) == nil) }
        #expect(throws: DatabaseError.self) { try memory.inDatabase { db in try PageBuffers.refill(db, with: pages) } }
    }
}
