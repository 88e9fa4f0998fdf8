import GRDB
import GRDBSQLite
import SQLiteSupport
import Testing

@Suite struct StatementSlotsTests {
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

    /// Owned slots (an in-memory store's write path) keep their statements
    /// outside GRDB's cache, and release them with themselves: a simulation's
    /// 10,000 stores do not pay GRDB's bookkeeping for each statement.
    /// Shared slots leave theirs in GRDB's cache for the next set of slots.
    @Test func ownedSlotsFinalizeTheirStatementsWhenReleasedAndSharedOnesLeaveThemCached() throws {
        let queue = try DatabaseQueue()
        try queue.inDatabase { db in
            try db.execute(sql: "CREATE TABLE t (x INTEGER NOT NULL)")
            let before = liveStatements(db)
            var owned: StatementSlots? = StatementSlots(count: 1, owned: true)
            do {
                let insert = try owned!.statement(0, db, "INSERT INTO t VALUES (?)")
                insert.bind(1, Int64(7))
                try insert.execute()
            }
            #expect(liveStatements(db) == before + 1, "the slots keep the statement between uses")
            owned = nil
            #expect(liveStatements(db) == before, "the owned statement is finalized with its slots")
            #expect(try Int.fetchOne(db, sql: "SELECT x FROM t") == 7)

            var shared: StatementSlots? = StatementSlots(count: 1)
            try shared!.statement(0, db, "DELETE FROM t").execute()
            shared = nil
            #expect(liveStatements(db) == before + 1, "GRDB's cache keeps a shared slot's statement")
        }
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
