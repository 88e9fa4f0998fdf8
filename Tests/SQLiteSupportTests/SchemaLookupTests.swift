import GRDB
import SQLiteSupport
import Testing

@Suite struct SchemaLookupTests {
    /// A table, a column of it, and nothing else: not a view, an index, a
    /// missing table, a missing column, nor a table of another schema.
    @Test func findsTablesAndColumnsOfTheMainDatabaseOnly() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE journal (seq INTEGER PRIMARY KEY, payload BLOB);
                CREATE INDEX journal_by_payload ON journal (payload);
                CREATE VIEW recent AS SELECT seq FROM journal;
                CREATE TEMP TABLE scratch (x);
                """)
        }
        try queue.read { db throws in
            let tables = try ["journal", "JOURNAL", "recent", "journal_by_payload", "outbox", "scratch"].map {
                try SchemaLookup.hasTable(db, $0)
            }
            // Names compare as SQLite compares them; a view, an index, a missing
            // table and a temporary one are not tables of the main database.
            #expect(tables == [true, true, false, false, false, false])
            let columns = try [("journal", "payload"), ("journal", "purged_payload_hash"), ("outbox", "seq")].map {
                try SchemaLookup.hasColumn(db, table: $0.0, column: $0.1)
            }
            #expect(columns == [true, false, false])
        }
    }
}
