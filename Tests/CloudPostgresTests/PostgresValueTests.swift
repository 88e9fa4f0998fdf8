import CloudPostgres
import PostgresNIO
import PostgresTestSupport
import Testing

/// Text that needs every escape: COPY's, the array literal's, and UTF-8.
private let awkwardText = "tab\there, new\nline, cr\r, back\\slash, \"quote\", 'single', {brace}, comma, NULL, é, 🦊"

private let everyKind: [(sqlType: String, value: PostgresValue)] = [
    ("int8", .int64(Int64.min)),
    ("int8", .int64(Int64.max)),
    ("bool", .bool(true)),
    ("float8", .double(-2.5e-300)),
    ("text", .text(awkwardText)),
    ("text", .text("")),
    ("bytea", .bytea([0, 1, 0x5c, 0x7f, 0x80, 0xff])),
    ("bytea", .bytea([])),
    ("int8[]", .int64Array([1, -2, Int64.max])),
    ("int8[]", .int64Array([])),
    ("int8[]", .optionalInt64Array([nil, 7, nil])),
    ("bool[]", .boolArray([true, false])),
    ("bool[]", .optionalBoolArray([nil, true])),
    ("text[]", .textArray([awkwardText, "", "NULL", "plain"])),
    ("text[]", .textArray([])),
    ("text[]", .optionalTextArray(["a", nil, ""])),
    ("bytea[]", .byteaArray([[1, 2], [], [0x5c]])),
    ("bytea[]", .optionalByteaArray([nil, [0xff]])),
]

/// Every kind at once, as a prepared statement.
private enum EveryKind: PostgresStatement {
    static let sql = "SELECT " + everyKind.indices.map { "$\($0 + 1)::\(everyKind[$0].sqlType)" }.joined(separator: ", ")
    static let parameters = everyKind.map(\.value.dataType)
}

@Test func everyValueKindRoundTripsThroughAStatementAndAPreparedOne() throws {
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            for (sqlType, value) in everyKind {
                let rows = try session.query("SELECT $1::\(sqlType) AS v", [value])
                #expect(rows.map(\.values) == [[value]], "\(sqlType)")
            }
            let values = everyKind.map(\.value)
            #expect(try session.query(EveryKind.self, values).map(\.values) == [values])
            #expect(try session.query(EveryKind.self, values.map { _ in .null }).map(\.values) == [values.map { _ in .null }])
            let nulls = try session.query("SELECT $1::int8 AS a, $2::text AS b, $3::bytea[] AS c", [.null, .null, .null])
            #expect(nulls.first?.values == [.null, .null, .null])
        }
    }
}

@Test func everyValueKindRoundTripsThroughATableByInsertAndByCopy() throws {
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            let columns = everyKind.indices.map { "c\($0)" }
            let definitions = zip(columns, everyKind).map { "\($0) \($1.sqlType)" }.joined(separator: ", ")
            try session.executeScript("CREATE TABLE kinds (id int8 PRIMARY KEY, \(definitions))")
            let values = everyKind.map(\.value)
            let placeholders = (1...(values.count + 1)).map { "$\($0)" }.joined(separator: ", ")
            #expect(try session.execute("INSERT INTO kinds VALUES (\(placeholders))", [.int64(1)] + values) == 1)
            #expect(try session.copyFrom(table: "kinds", columns: ["id"] + columns, rows: [[.int64(2)] + values]) == 1)
            let nullRow = [PostgresValue.int64(3)] + values.map { _ in PostgresValue.null }
            #expect(try session.copyFrom(table: "kinds", columns: ["id"] + columns, rows: [nullRow]) == 1)
            let rows = try session.query("SELECT * FROM kinds ORDER BY id")
            #expect(rows.count == 3)
            #expect(Array(rows[0].values.dropFirst()) == values)
            #expect(Array(rows[1].values.dropFirst()) == values)
            #expect(Array(rows[2].values.dropFirst()) == values.map { _ in .null })
        }
    }
}

@Test func integersGoIntoNarrowerColumnsOnlyWhenTheyFit() throws {
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            try session.executeScript("CREATE TABLE narrow (small int2, medium int4, many int4[])")
            try session.query("INSERT INTO narrow VALUES ($1, $2, $3)", [.int64(-32768), .int64(2_147_483_647), .int64Array([1, 2])])
            let row = try #require(try session.query("SELECT small, medium, many FROM narrow").first)
            #expect(try row["small"].int64 == -32768)
            #expect(try row["medium"].int64 == 2_147_483_647)
            #expect(try row["many"].int64Array == [1, 2])
            for binds: [PostgresValue] in [
                [.int64(32768), .int64(0), .int64Array([])], [.int64(0), .int64(1 << 31), .int64Array([])],
                [.int64(0), .int64(0), .int64Array([1 << 40])],
            ] {
                #expect {
                    try session.query("INSERT INTO narrow VALUES ($1, $2, $3)", binds)
                } throws: { error in
                    guard let failure = error as? PostgresFailure else { return false }
                    return failure.code == .server && failure.sqlState == "22003"
                }
            }
            #expect(try session.query("SELECT count(*) AS n FROM narrow")[0]["n"].int64 == 1)
        }
    }
}

@Test func aValueOfTheWrongTypeOrCountIsRefusedWithoutTheValueAndTheSessionGoesOn() throws {
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            try session.executeScript("CREATE TABLE typed (n int8, b bytea)")
            #expect {
                try session.query("INSERT INTO typed (n) VALUES ($1)", [.text("not-a-number")])
            } throws: { error in
                guard let failure = error as? PostgresFailure else { return false }
                return failure.code == .server && failure.sqlState == "42804" && !failure.description.contains("not-a-number")
            }
            #expect {
                try session.query("INSERT INTO typed VALUES ($1, $2)", [.int64(1)])
            } throws: { error in
                (error as? PostgresFailure)?.sqlState == "08P01"
            }
            // Nothing was written, and the connection is still usable.
            #expect(try session.query("SELECT count(*) AS n FROM typed").first?["n"].int64 == 0)
        }
    }
}

@Test func readingAColumnAsTheWrongTypeOrNullThrowsNamingIt() throws {
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            let row = try #require(try session.query("SELECT 1::int4 AS n, NULL::text AS missing, '{1,NULL}'::int8[] AS holes").first)
            #expect(try row["n"].int64 == 1)
            #expect(try row["missing"].optionalText == nil)
            #expect(try row["holes"].optionalInt64Array == [1, nil])
            let reads: [(PostgresRowValues) throws -> Void] = [
                { _ = try $0["n"].text },
                { _ = try $0["missing"].text },
                { _ = try $0["holes"].int64Array },
                { _ = try $0["absent"].int64 },
                { _ = try $0[7].int64 },
            ]
            for read in reads {
                #expect {
                    try read(row)
                } throws: { error in
                    guard let failure = error as? PostgresFailure else { return false }
                    return failure.code == .decoding && failure.description.contains("column")
                }
            }
        }
    }
}

@Test func aColumnOfATypeNotReadIsADecodingFailureNamingIt() throws {
    try TestPostgres.withDatabase { pool, _ in
        try pool.withSession { session throws in
            #expect {
                try session.query("SELECT now() AS stamp")
            } throws: { error in
                guard let failure = error as? PostgresFailure else { return false }
                return failure.code == .decoding && failure.description.contains("stamp")
            }
            let row = try #require(try session.query("SELECT count(*) AS n, 1.5::float4 AS f, 'x'::varchar AS v, '{\"a\":1}'::jsonb AS j").first)
            #expect(try row["n"].int64 == 1)
            #expect(try row["f"].double == 1.5)
            #expect(try row["v"].text == "x")
            #expect(try row["j"].text == "{\"a\": 1}")
        }
    }
}
