import GRDB
import SQLiteSupport
import Testing

@Suite struct StatementAuthorizerTests {
    private struct Refused: Error {}

    /// Without GRDB's authorizer a connection still does what a store asks
    /// of it: transactions commit, a throwing one rolls back, and a table
    /// made on it is found and used at once. GRDB no longer learns what a
    /// statement reads, which is what the authorizer was for.
    @Test func aConnectionWithoutGRDBsAuthorizerCommitsRollsBackAndSeesItsSchemaChanges() throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in db.dropStatementAuthorizer() }
        let queue = try DatabaseQueue(configuration: configuration)
        let plain = try DatabaseQueue()
        for connection in [queue, plain] {
            try connection.write { db in
                try db.execute(sql: "CREATE TABLE journal (seq INTEGER PRIMARY KEY, payload BLOB)")
                try db.execute(sql: "INSERT INTO journal (payload) VALUES (x'01')")
            }
        }
        #expect(throws: Refused.self) {
            try queue.write { db throws in
                try db.execute(sql: "INSERT INTO journal (payload) VALUES (x'02')")
                throw Refused()
            }
        }
        try queue.write { db throws in
            try db.execute(sql: "CREATE TABLE outbox (seq INTEGER PRIMARY KEY, message BLOB)")
            #expect(try SchemaLookup.hasTable(db, "outbox"))
            try db.execute(sql: "INSERT INTO outbox (message) SELECT payload FROM journal")
        }
        try queue.writeWithoutTransaction { db in
            #expect(!db.isInsideTransaction, "every transaction ended")
        }
        try queue.read { db throws in
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM journal") == 1, "the refused write rolled back")
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox") == 1)
            #expect(try db.makeStatement(sql: "SELECT payload FROM journal").databaseRegion.isEmpty)
        }
        try plain.read { db throws in
            #expect(try !db.makeStatement(sql: "SELECT payload FROM journal").databaseRegion.isEmpty,
                    "GRDB's authorizer tells it what a statement reads")
        }
    }
}
