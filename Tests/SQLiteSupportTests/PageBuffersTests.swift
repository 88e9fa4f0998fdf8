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

    /// The hazard attaching pages must close: SQLite keeps its page cache
    /// between transactions for as long as the 16 bytes at offset 24 of the
    /// file (change counter, page count, free list) stay as they were, and
    /// two databases can share them. Every database here has the same
    /// header, and a connection pointed from one to another in any order
    /// reads the new one's rows, sees its data version move, and writes
    /// into it without touching the others.
    @Test func aConnectionGivenPagesOfTheSameHeaderReadsTheNewPagesNotItsCachedOnes() throws {
        let fills: [UInt8] = [1, 2, 3, 4]
        let images = try fills.map { try image(rows: 40, width: 100, fill: $0) }
        #expect(Set(images.map { Array($0[24..<40]) }).count == 1, "the images share the bytes SQLite checks for a change")
        let pages = try images.map { try PageBuffer($0) }
        let queue = try openBuffer()
        let handle = try #require(queue.inDatabase { $0.sqliteConnection })
        var random = SystemRandomNumberGenerator()
        var current: Int?
        for round in 0..<3 {
            for step in 0..<40 {
                let index = Int.random(in: 0..<pages.count, using: &random)
                let version = try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA data_version") }
                try PageBuffers.attach(handle, pages[index])
                // As after another connection's commit: what keeps state
                // across transactions (FTS5's index structure) reads it
                // again. The same pages again are no change.
                let moved = try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA data_version") } != version
                #expect(moved == (index != current), "round \(round), step \(step)")
                current = index
                let read = try queue.read { db in
                    try [UInt8](Data.fetchAll(db, sql: "SELECT v FROM t WHERE n IN (0, 20, 39)").joined())
                }
                #expect(read == [UInt8](repeating: fills[index], count: 300), "round \(round), step \(step): pages \(index) read as another's")
            }
            // One commit in each, into the pages the connection was given:
            // their headers stay alike.
            for index in pages.indices {
                try PageBuffers.attach(handle, pages[index])
                current = index
                try queue.write { db in
                    try db.execute(sql: "UPDATE t SET v = ? WHERE n = ?", arguments: [Data(repeating: fills[index], count: 100), round])
                }
            }
            #expect(Set(pages.map { $0.withBytes { Array($0[24..<40]) } }).count == 1)
        }
        for (index, page) in pages.enumerated() {
            try PageBuffers.attach(handle, page)
            #expect(try queue.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok", "pages \(index)")
        }
    }

    /// Pages a process owns, attached to connections in turn between
    /// transactions (`PageBuffers.attach`), as a pool lends connections to
    /// stores: whichever connection has them reads every commit made
    /// through another, though every database here starts with the same
    /// header; and a connection given back the pages it had last keeps its
    /// cache of them (its data version stays) only if no other connection
    /// had them since.
    @Test func pagesAttachedToConnectionsInTurnReadEveryCommitAndKeepACacheOnlyWhileNoOtherHadThem() throws {
        let rows = 40
        var expected = [UInt8](1...3).map { [UInt8](repeating: $0, count: rows) }
        let pages = try expected.indices.map { try PageBuffer(image(rows: rows, width: 100, fill: expected[$0][0])) }
        let connections = try (0..<2).map { _ in try openBuffer() }
        let handles = try connections.map { queue in try #require(queue.inDatabase { $0.sqliteConnection }) }
        func attached<T>(_ connection: Int, _ index: Int, _ body: (DatabaseQueue) throws -> T) throws -> T {
            try PageBuffers.attach(handles[connection], pages[index])
            defer { try? PageBuffers.attach(handles[connection], nil) }
            return try body(connections[connection])
        }
        func version(_ queue: DatabaseQueue) throws -> Int? { try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA data_version") } }
        var random = SystemRandomNumberGenerator()
        for step in 0..<300 {
            let connection = Int.random(in: 0..<2, using: &random), index = Int.random(in: 0..<pages.count, using: &random)
            let row = Int.random(in: 0..<rows, using: &random), fill = UInt8.random(in: 10...250, using: &random)
            let read = try attached(connection, index) { queue in
                if step % 3 != 0 {
                    try queue.write { db in
                        try db.execute(sql: "UPDATE t SET v = ? WHERE n = ?", arguments: [Data(repeating: fill, count: 100), row])
                    }
                    expected[index][row] = fill
                }
                return try queue.read { db in try Data.fetchAll(db, sql: "SELECT v FROM t ORDER BY n").map { $0[0] } }
            }
            #expect(read == expected[index], "step \(step): connection \(connection) read pages \(index) as they were")
        }
        // Pages given and taken back with no transaction on them leave the
        // cache with the pages before them: taken again, they are read anew.
        let alike = try (0..<2).map { try PageBuffer(image(rows: rows, width: 100, fill: UInt8(200 + $0))) }
        func write(_ connection: Int, _ buffer: PageBuffer, row: Int, _ fill: UInt8) throws {
            try PageBuffers.attach(handles[connection], buffer)
            defer { try? PageBuffers.attach(handles[connection], nil) }
            try connections[connection].write { db in
                try db.execute(sql: "UPDATE t SET v = ? WHERE n = ?", arguments: [Data(repeating: fill, count: 100), row])
            }
        }
        try write(1, alike[0], row: 0, 1)
        try write(1, alike[1], row: 0, 2)
        try write(0, alike[0], row: 1, 3)
        try write(1, alike[1], row: 1, 4)
        #expect(alike[0].withBytes { Array($0[24..<40]) } == alike[1].withBytes { Array($0[24..<40]) })
        try PageBuffers.attach(handles[0], alike[0])
        let before = try version(connections[0])
        try PageBuffers.attach(handles[0], nil)
        try PageBuffers.attach(handles[0], alike[1])
        try PageBuffers.attach(handles[0], nil)
        try PageBuffers.attach(handles[0], alike[1])
        #expect(try version(connections[0]) != before, "the cache of the pages before is dropped")
        #expect(try connections[0].read { db in try Data.fetchAll(db, sql: "SELECT v FROM t WHERE n < 2 ORDER BY n").map { $0[0] } } == [2, 4])
        try PageBuffers.attach(handles[0], nil)

        let first = try attached(0, 0) { try version($0) }
        #expect(try attached(0, 0) { try version($0) } == first, "given back untouched, the pages keep their cache")
        _ = try attached(1, 0) { try version($0) }
        #expect(try attached(0, 0) { try version($0) } != first, "another connection had them: the cache is dropped")
        for index in pages.indices {
            #expect(try attached(0, index) { queue in try queue.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } } == "ok")
        }
    }

    /// A buffer holds what the file would: its bytes open as a database
    /// file, and `serializedFromSnapshot` gives them as they are.
    @Test func aBuffersBytesAreTheDatabaseFileAndItsSerializedImage() throws {
        let pages = try image(rows: 10, width: 50, fill: 7)
        let queue = try openBuffer()
        let buffer = try PageBuffer(pages)
        try queue.inDatabase { db in try PageBuffers.attach(try #require(db.sqliteConnection), buffer) }
        #expect(try queue.serializedFromSnapshot { _ in }.image == pages)
        #expect(buffer.withBytes { Array($0) } == pages && buffer.schemaCookie == 1)
        let copy = try DatabaseQueue()
        try copy.load(image: pages)
        #expect(try copy.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t") } == 10)
        #expect(PageBuffers.schemaCookie(of: pages) == 1, "one schema statement made the table")
    }

    @Test func pagesAreAttachedOnlyBetweenTransactionsAndOnlyToABuffer() throws {
        let queue = try openBuffer()
        let pages = try PageBuffer(image(rows: 1, width: 1, fill: 0))
        #expect(throws: DatabaseError.self) {
            try queue.writeWithoutTransaction { db in
                try db.inTransaction {
                    try PageBuffers.attach(try #require(db.sqliteConnection), pages)
                    return .commit
                }
            }
        }
        let memory = try DatabaseQueue()
        memory.inDatabase { db in #expect(PageBuffers.bytes(db) == nil) }
        #expect(throws: DatabaseError.self) { try memory.inDatabase { db in try PageBuffers.attach(try #require(db.sqliteConnection), pages) } }
    }
}
