import GRDB
import GRDBSQLite
import SQLiteSupport
import Testing

@Suite struct ConnectionStatementsTests {
    /// The statements a connection holds now, GRDB's cached ones included.
    private func liveStatements(_ db: Database) -> Int {
        var count = 0
        var statement = sqlite3_next_stmt(db.sqliteConnection, nil)
        while statement != nil {
            count += 1
            statement = sqlite3_next_stmt(db.sqliteConnection, statement)
        }
        return count
    }

    /// Owned statements (an in-memory store's write path) are kept outside
    /// GRDB's cache, BEGIN and COMMIT too, and released with their keeper: a
    /// simulation's 10,000 stores do not pay GRDB's bookkeeping for each
    /// statement. Shared ones leave theirs in GRDB's cache for the next
    /// transaction, and keep no BEGIN or COMMIT of their own.
    @Test func ownedStatementsAreFinalizedWithTheirKeeperAndSharedOnesStayInGRDBsCache() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in try db.execute(sql: "CREATE TABLE t (x INTEGER NOT NULL)") }
        let before = queue.inDatabase(liveStatements)
        try {
            let owned = ConnectionStatements(groups: [1], owned: true)
            try queue.cachedWrite(owned) { db in
                let insert = try owned.group(0).statement(0, db, "INSERT INTO t VALUES (?)")
                insert.bind(1, Int64(7))
                try insert.execute()
            }
            #expect(queue.inDatabase(liveStatements) == before + 3, "the insert, BEGIN IMMEDIATE and COMMIT are kept between transactions")
        }()
        #expect(queue.inDatabase(liveStatements) == before, "owned statements are finalized with their keeper")
        #expect(try queue.read { db in try Int.fetchOne(db, sql: "SELECT x FROM t") } == 7)

        let cached = queue.inDatabase(liveStatements)
        try {
            let shared = ConnectionStatements(groups: [1])
            try queue.cachedWrite(shared) { db in try shared.group(0).statement(0, db, "DELETE FROM t").execute() }
        }()
        #expect(queue.inDatabase(liveStatements) == cached + 3, "GRDB's cache keeps the DELETE, BEGIN IMMEDIATE and COMMIT")
    }

    /// Each group numbers its slots from 0, and a slot keeps the statement
    /// it was first given for the connection's life.
    @Test func eachGroupNumbersItsOwnSlots() throws {
        let queue = try DatabaseQueue()
        let kept = ConnectionStatements(groups: [1, 2], owned: true)
        let answers = try queue.cachedWrite(kept) { db in
            try [(0, "SELECT 1"), (1, "SELECT 2"), (0, "SELECT 3")].map { group, sql in
                let statement = try kept.group(group).statement(0, db, sql)
                defer { statement.reset() }
                return try statement.step() ? statement.int64(0) : -1
            }
        }
        #expect(answers == [1, 2, 1], "slot 0 of group 0 still holds SELECT 1")
    }

    /// A statement prepared outside GRDB fails as GRDB's would: SQLite's
    /// message and the statement's SQL, at preparing and at stepping.
    @Test func anOwnedStatementFailsWithSQLitesMessageAndItsSQL() throws {
        let queue = try DatabaseQueue()
        try queue.inDatabase { db in
            try db.execute(sql: "CREATE TABLE t (x INTEGER NOT NULL)")
            let unknown = #expect(throws: DatabaseError.self) { try DirectStatement(owned: db, "SELECT y FROM t") }
            #expect(unknown?.message?.contains("no such column: y") == true)
            #expect(unknown?.sql == "SELECT y FROM t")
            let insert = try DirectStatement(owned: db, "INSERT INTO t VALUES (?)")
            insert.bind(1, Int64?.none)
            let null = #expect(throws: DatabaseError.self) { try insert.execute() }
            #expect(null?.resultCode == .SQLITE_CONSTRAINT)
            #expect(null?.sql == "INSERT INTO t VALUES (?)")
            // The failed step was reset: the statement runs again.
            insert.bind(1, Int64(1))
            try insert.execute()
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t") == 1)
        }
    }
}
