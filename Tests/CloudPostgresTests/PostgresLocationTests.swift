import CloudPostgres
import Testing

@Test func locationParsesUserHostPortAndDatabase() throws {
    let location = try PostgresLocation(parsing: "postgres://sightline@127.0.0.1:5433/cloud")
    #expect(location == PostgresLocation(user: "sightline", host: "127.0.0.1", port: 5433, database: "cloud"))
}

@Test func locationAcceptsPostgresqlSchemeWithDefaults() throws {
    let location = try PostgresLocation(parsing: "postgresql://alice@db.example.internal")
    #expect(location.host == "db.example.internal")
    #expect(location.port == 5432)
    #expect(location.database == "alice")
    #expect(location.tls == .prefer)
}

@Test func locationRefusesAPasswordWithoutRepeatingIt() {
    for url in ["postgres://sightline:hunter2@127.0.0.1/db", "postgres://sightline:@127.0.0.1/db",
                "postgresql://sightline:p%40ss@host:5432/db"] {
        #expect {
            try PostgresLocation(parsing: url)
        } throws: { error in
            guard let failure = error as? PostgresFailure else { return false }
            return failure.code == .invalidLocation && failure.description.contains("PGPASSWORD")
                && !failure.description.contains("hunter2") && !failure.description.contains("p%40ss")
        }
    }
}

@Test func locationDescriptionIsTheCanonicalURLAndParsesBack() throws {
    let location = try PostgresLocation(parsing: "POSTGRESQL://us%20er@[::1]:6543/my%2Fdb?sslmode=require")
    #expect(location.user == "us er")
    #expect(location.host == "::1")
    #expect(location.database == "my/db")
    #expect(location.tls == .require)
    #expect(location.description == "postgres://us%20er@[::1]:6543/my%2Fdb?sslmode=require")
    #expect(try PostgresLocation(parsing: location.description) == location)
}

@Test func locationRefusesBadPortsHostsAndParameters() {
    let bad = [
        "postgres://u@host:0/db", "postgres://u@host:65536/db", "postgres://u@host:http/db", "postgres://u@host:/db",
        "postgres://u@host:-1/db", "postgres://u@/db", "postgres://host:5432/db", "mysql://u@host/db",
        "postgres://u@host/db?sslmode=verify-full", "postgres://u@host/db?application_name=x", "postgres://u@ho st/db",
        "postgres://u@host/db/extra", "postgres://u@host/db#fragment", "postgres://%zz@host/db", "127.0.0.1:5432",
    ]
    for url in bad {
        #expect(throws: PostgresFailure.self, "\(url)") { try PostgresLocation(parsing: url) }
    }
}

@Test func isPostgresURLTellsURLsFromPaths() {
    #expect(PostgresLocation.isPostgresURL("postgres://u@h/d"))
    #expect(PostgresLocation.isPostgresURL("PostgreSQL://u@h/d"))
    #expect(!PostgresLocation.isPostgresURL("/var/lib/sightline/cloud.sqlite"))
    #expect(!PostgresLocation.isPostgresURL("postgres.sqlite"))
    #expect(!PostgresLocation.isPostgresURL(""))
}
