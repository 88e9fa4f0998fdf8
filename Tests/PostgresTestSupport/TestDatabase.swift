import CloudPostgres
import Foundation

/// A new, empty database of its own on the test server, dropped when the
/// value is released: for a test whose store outlives one closure (a cloud
/// held by a harness, servers started as processes).
public final class TestDatabase: Sendable {
    public let location: PostgresLocation
    public let password: String?
    private let server: TestPostgres.Server
    private let name: String

    public init() throws {
        let server = try TestPostgres.server()
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let admin = PostgresPool(location: server.location, password: server.password, size: 1)
        defer { admin.close() }
        try admin.withSession { try $0.executeScript("CREATE DATABASE \(name)") }
        self.server = server
        self.name = name
        var location = server.location
        location.database = name
        self.location = location
        password = server.password
    }

    /// The database's URL, as `--db` takes it (the password goes by `PGPASSWORD`).
    public var url: String { location.description }

    deinit {
        let admin = PostgresPool(location: server.location, password: server.password, size: 1)
        defer { admin.close() }
        _ = try? admin.withSession { try $0.executeScript("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
    }
}
