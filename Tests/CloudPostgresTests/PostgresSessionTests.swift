import CloudPostgres
import Foundation
import PostgresNIO
import PostgresTestSupport
import Testing

/// The prepared statements this connection holds, by name.
private func preparedNames(_ session: PostgresSession) throws -> [String] {
    try session.query("SELECT name FROM pg_prepared_statements ORDER BY name").map { try $0[0].text }
}

private enum NextNumber: PostgresStatement {
    static let sql = "SELECT $1::int8 + 1 AS next"
    static let parameters: [PostgresDataType] = [.int8]
}

private enum EchoWithBackend: PostgresStatement {
    static let sql = "SELECT pg_backend_pid()::int8 AS pid, $1::text AS echo"
    static let parameters: [PostgresDataType] = [.text]
}

@Test func aPostgresStatementIsPreparedOncePerConnectionAndReused() throws {
    try TestPostgres.withDatabase(size: 1) { pool, _ in
        try pool.withSession { session throws in
            for value in Int64(0)..<5 {
                #expect(try session.query(NextNumber.self, [.int64(value)])[0]["next"].int64 == value + 1)
            }
            // SQL text runs unnamed: it leaves nothing prepared.
            #expect(try session.query("SELECT $1::int8 + 1 AS next", [.int64(1)])[0]["next"].int64 == 2)
            #expect(try preparedNames(session) == ["sightline.NextNumber"])
        }
        // The next session on the same connection finds it prepared.
        try pool.withSession { session throws in
            #expect(try session.query(NextNumber.self, [.int64(41)])[0]["next"].int64 == 42)
            #expect(try preparedNames(session) == ["sightline.NextNumber"])
        }
    }
}

@Test func aPostgresStatementIsPreparedAgainAfterTheConnectionIsKilled() throws {
    try TestPostgres.withDatabase(size: 1) { pool, server in
        let firstPID = try pool.withSession { try $0.query(EchoWithBackend.self, [.text("one")])[0]["pid"].int64 }

        // Another connection ends this one, as an administrator or a failover would.
        let killer = PostgresPool(location: server.location, password: server.password, size: 1)
        defer { killer.close() }
        try killer.withSession { session throws in
            #expect(try session.query("SELECT pg_terminate_backend($1::int4) AS done", [.int64(firstPID)])[0]["done"].bool)
            for _ in 0..<200 {
                let alive = try session.query("SELECT count(*) AS n FROM pg_stat_activity WHERE pid = $1::int4", [.int64(firstPID)])
                if try alive[0]["n"].int64 == 0 { break }
                Thread.sleep(forTimeInterval: 0.01)
            }
        }

        // The pool notices the closed connection at checkout, or the first
        // statement on it reports it lost; either way the next one works on a
        // new connection, where the statement is prepared again.
        var lost = 0
        var secondPID: Int64?
        while secondPID == nil && lost < 2 {
            do {
                secondPID = try pool.withSession { session throws in
                    let row = try session.query(EchoWithBackend.self, [.text("two")])[0]
                    #expect(try row["echo"].text == "two")
                    #expect(try preparedNames(session) == ["sightline.EchoWithBackend"])
                    return try row["pid"].int64
                }
            } catch let failure as PostgresFailure where failure.code == .connectionLost {
                lost += 1
            }
        }
        #expect(lost <= 1)
        let pid = try #require(secondPID)
        #expect(pid != firstPID)
    }
}

private enum ReadLedger: PostgresStatement {
    static let sql = "SELECT count(*) AS n FROM ledger WHERE id > $1"
    static let parameters: [PostgresDataType] = [.int8]
}

/// postgres-nio remembers a failed preparation for the connection's life; a
/// statement that failed to prepare (its table not made yet, a lock timeout)
/// must not fail on that connection for ever.
@Test func aPostgresStatementThatFailedToPrepareWorksOnceItCan() throws {
    try TestPostgres.withDatabase(size: 1) { pool, _ in
        #expect {
            try pool.withSession { try $0.query(ReadLedger.self, [.int64(0)]) }
        } throws: { error in
            (error as? PostgresFailure)?.sqlState == "42P01"
        }
        try pool.withSession { try $0.executeScript("CREATE TABLE ledger (id int8); INSERT INTO ledger VALUES (1), (2)") }
        #expect(try pool.withSession { try $0.query(ReadLedger.self, [.int64(1)])[0]["n"].int64 } == 1)
    }
}

@Test func aPostgresStatementRefusesAValueOfTheWrongTypeOrCountBeforeItIsSent() throws {
    try TestPostgres.withDatabase(size: 1) { pool, _ in
        try pool.withSession { session throws in
            for binds: [PostgresValue] in [[.text("not a number")], [.int64(1), .int64(2)], []] {
                #expect {
                    try session.query(NextNumber.self, binds)
                } throws: { error in
                    guard let failure = error as? PostgresFailure else { return false }
                    return failure.code == .binding && failure.description.contains("NextNumber")
                        && !failure.description.contains("not a number")
                }
            }
            // Nothing was sent: nothing was prepared, and the session goes on.
            #expect(try preparedNames(session) == [])
            #expect(try session.query(NextNumber.self, [.null])[0]["next"].isNull)
        }
    }
}

@Test func aStatementSeesTheTableAsItIsAfterASchemaChange() throws {
    try TestPostgres.withDatabase(size: 1) { pool, _ in
        try pool.withSession { session throws in
            try session.executeScript("CREATE TABLE shape (a int8)")
            try session.query("INSERT INTO shape VALUES (1)")
            #expect(try session.query("SELECT * FROM shape")[0].values == [.int64(1)])
            try session.executeScript("ALTER TABLE shape ADD COLUMN b text DEFAULT 'b'")
            #expect(try session.query("SELECT * FROM shape")[0].values == [.int64(1), .text("b")])
        }
    }
}

@Test func executeReturnsTheRowsAffected() throws {
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            try session.executeScript("CREATE TABLE counted (id int8 PRIMARY KEY, label text)")
            #expect(try session.execute("INSERT INTO counted SELECT n, NULL FROM generate_series(1, $1) AS n", [.int64(5)]) == 5)
            #expect(try session.execute("UPDATE counted SET label = $1 WHERE id > $2", [.text("big"), .int64(3)]) == 2)
            #expect(try session.execute("DELETE FROM counted WHERE id = $1", [.int64(1)]) == 1)
            #expect(try session.execute("DELETE FROM counted WHERE id = $1", [.int64(1)]) == 0)
            #expect(try session.execute(
                "MERGE INTO counted USING (SELECT unnest($1::int8[]) AS id) AS s ON counted.id = s.id "
                    + "WHEN MATCHED THEN UPDATE SET label = 'merged' WHEN NOT MATCHED THEN INSERT VALUES (s.id, 'new')",
                [.int64Array([2, 9])]) == 2)
            #expect(try session.execute("CREATE INDEX counted_label ON counted (label)") == 0)
            // Batched upsert with nullable columns, as the backend writes them.
            let upserted = try session.execute(
                "INSERT INTO counted SELECT * FROM unnest($1::int8[], $2::text[]) "
                    + "ON CONFLICT (id) DO UPDATE SET label = excluded.label",
                [.int64Array([2, 10, 11]), .optionalTextArray(["again", nil, "eleven"])])
            #expect(upserted == 3)
            let labels = try session.query("SELECT label FROM counted WHERE id = ANY($1) ORDER BY id", [.int64Array([2, 10, 11])])
            #expect(try labels.map { try $0[0].optionalText } == ["again", nil, "eleven"])
        }
    }
}

@Test func aScriptRunsEveryStatementWhateverItsSemicolonsAreInside() throws {
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            try session.executeScript("""
                -- a comment; with a semicolon
                CREATE TABLE script (id int8, note text);
                /* a block; /* nested; */ comment */
                INSERT INTO script VALUES (1, 'semi;colon'), (2, E'escaped \\' quote;'), (3, $$dollar; 'quoted'$$);
                CREATE FUNCTION script_count() RETURNS int8 LANGUAGE plpgsql AS $body$
                BEGIN
                    RETURN (SELECT count(*) FROM script);
                END;
                $body$;
                INSERT INTO "script" VALUES (4, 'quoted;name');;
                ;
                """)
            let notes = try session.query("SELECT note FROM script ORDER BY id").map { try $0[0].text }
            #expect(notes == ["semi;colon", "escaped ' quote;", "dollar; 'quoted'", "quoted;name"])
            #expect(try session.query("SELECT script_count() AS n")[0]["n"].int64 == 4)
        }
    }
}

@Test func aTransactionCommitsOrRollsBackWhenItsBodyThrows() throws {
    struct Abandon: Error {}
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            try session.executeScript("CREATE TABLE ledger (id int8 PRIMARY KEY)")
            try session.transaction {
                try session.execute("INSERT INTO ledger VALUES (1)")
            }
            #expect(throws: Abandon.self) {
                try session.transaction(isolation: .repeatableRead) {
                    try session.execute("INSERT INTO ledger VALUES (2)")
                    throw Abandon()
                }
            }
            #expect(try session.query("SELECT id FROM ledger ORDER BY id").map { try $0[0].int64 } == [1])
        }
    }
}

@Test func aCommitThatPostgreSQLTurnedIntoARollbackIsAnError() throws {
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            try session.executeScript("CREATE TABLE ledger (id int8 PRIMARY KEY)")
            #expect {
                try session.transaction {
                    try session.execute("INSERT INTO ledger VALUES (1)")
                    // A failure the body swallows still aborts the transaction.
                    _ = try? session.execute("INSERT INTO ledger VALUES (1)")
                }
            } throws: { error in
                (error as? PostgresFailure)?.sqlState == "25P02"
            }
            #expect(try session.query("SELECT count(*) AS n FROM ledger")[0]["n"].int64 == 0)
        }
    }
}

@Test func aReadOnlyTransactionRefusesWrites() throws {
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            try session.executeScript("CREATE TABLE ledger (id int8)")
            #expect {
                try session.transaction(readOnly: true) { try session.execute("INSERT INTO ledger VALUES (1)") }
            } throws: { error in
                guard let failure = error as? PostgresFailure else { return false }
                return failure.code == .server && failure.sqlState == "25006"
            }
        }
    }
}

@Test func serializationFailuresAndDeadlocksAreRetryable() throws {
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            for state in ["40001", "40P01"] {
                #expect {
                    try session.executeScript("DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '\(state)'; END $$")
                } throws: { error in
                    guard let failure = error as? PostgresFailure else { return false }
                    return failure.code == .retryable && failure.sqlState == state && failure.isTransient
                }
            }
        }
    }
}

@Test func aUniqueViolationKeepsTheRowValuesOutOfItsDescription() throws {
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            try session.executeScript("CREATE TABLE people (name text CONSTRAINT people_name UNIQUE)")
            try session.execute("INSERT INTO people VALUES ($1)", [.text("private-name")])
            #expect {
                try session.execute("INSERT INTO people VALUES ($1)", [.text("private-name")])
            } throws: { error in
                guard let failure = error as? PostgresFailure else { return false }
                return failure.isUniqueViolation && failure.constraint == "people_name"
                    && failure.detail?.contains("private-name") == true && !failure.description.contains("private-name")
            }
        }
    }
}

@Test func aStatementPastTheTimeoutFailsAndTheConnectionStaysUsable() throws {
    try TestPostgres.withDatabase(size: 1, statementTimeout: .milliseconds(200)) { pool, _ in
        try pool.withSession { session throws in
            #expect {
                try session.query("SELECT pg_sleep(5)::text")
            } throws: { error in
                (error as? PostgresFailure)?.code == .timeout
            }
            #expect(try session.query("SELECT 1::int8 AS one")[0]["one"].int64 == 1)
        }
    }
}

@Test func copyLoadsRowsInSeveralBuffers() throws {
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            try session.executeScript("CREATE TABLE bulk (id int8, title text, body bytea, tags text[])")
            let count = 20_000
            // About 2.5 MB of COPY text: more than two of the encoder's buffers.
            let body = [UInt8](repeating: 0xab, count: 48)
            let rows = (0..<count).lazy.map { index -> [PostgresValue] in
                [.int64(Int64(index)), .text("title \(index)\twith a tab"), .bytea(body), .textArray(["t\(index % 7)", "x"])]
            }
            #expect(try session.copyFrom(table: "bulk", columns: ["id", "title", "body", "tags"], rows: rows) == count)
            let summary = try session.query(
                "SELECT count(*) AS n, sum(id)::int8 AS total, count(DISTINCT body) AS bodies, max(title) AS last FROM bulk")[0]
            #expect(try summary["n"].int64 == Int64(count))
            #expect(try summary["total"].int64 == Int64(count * (count - 1) / 2))
            #expect(try summary["bodies"].int64 == 1)
            #expect(try summary["last"].text == "title 9999\twith a tab")
        }
    }
}

@Test func copyRefusesARowOfTheWrongWidthAndNamesThatAreNotPlain() throws {
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            try session.executeScript("CREATE TABLE bulk (id int8, title text)")
            for (table, columns, row) in [
                ("bulk", ["id", "title"], [PostgresValue.int64(1)]),
                ("Bulk", ["id", "title"], [.int64(1), .text("x")]),
                ("bulk", ["id", "title\"; DROP TABLE bulk; --"], [.int64(1), .text("x")]),
            ] {
                #expect {
                    try session.copyFrom(table: table, columns: columns, rows: [row])
                } throws: { error in
                    (error as? PostgresFailure)?.code == .binding
                }
            }
            // A value the column refuses fails the whole COPY, and the session goes on.
            #expect {
                try session.copyFrom(table: "bulk", columns: ["id", "title"], rows: [[.int64(1), .text("a")], [.text("NaN"), .text("b")]])
            } throws: { error in
                (error as? PostgresFailure)?.code == .server
            }
            #expect(try session.query("SELECT count(*) AS n FROM bulk")[0]["n"].int64 == 0)
        }
    }
}

@Test func copyAndPreparedStatementsRunWhileEveryCooperativeThreadIsBlocked() async throws {
    // More blocking callers than Swift has cooperative threads: if the async
    // work of COPY or of a prepared statement needed one of them, this would
    // never finish.
    let callers = ProcessInfo.processInfo.activeProcessorCount + 2
    try await TestPostgres.withDatabase(size: callers) { pool, _ in
        try pool.withSession { try $0.executeScript("CREATE TABLE bulk (caller int8, n int8)") }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for caller in 0..<callers {
                group.addTask {
                    try pool.withSession { session throws in
                        #expect(try session.query(NextNumber.self, [.int64(Int64(caller))])[0]["next"].int64 == Int64(caller) + 1)
                        return try session.copyFrom(table: "bulk", columns: ["caller", "n"],
                                                    rows: (0..<1000).map { [.int64(Int64(caller)), .int64(Int64($0))] })
                    }
                }
            }
            var loaded = 0
            for try await count in group { loaded += count }
            #expect(loaded == callers * 1000)
        }
    }
}
