import CloudCore
import CloudPostgres
import CloudSQLite
import Foundation

/// The PostgreSQL databases of one benchmark run: each made empty for the
/// run on the server `--db` names and dropped when the run ends, so that a
/// run never measures, or harms, what a database held before.
///
/// The URL's own database is used only to connect for `CREATE DATABASE`
/// and `DROP DATABASE`; its role must be allowed to create databases
/// (`tools/postgres` makes such a role).
final class BenchDatabases {
    let server: PostgresLocation
    let password: String?
    /// Every database made, to drop at the end.
    private var made: [String] = []
    /// Distinguishes this run's databases from another run's on the same server.
    private let prefix: String

    init(server: PostgresLocation, password: String?) {
        self.server = server
        self.password = password
        prefix = "sightline_bench_\(ProcessInfo.processInfo.processIdentifier)_\(UInt32.random(in: 0...UInt32.max))"
    }

    /// The databases of a run on the server `url` names, with the password
    /// `settings` find; a URL or password that cannot be used is reported and
    /// exits with status 2.
    static func on(_ url: String, _ settings: PostgresSettings) throws -> BenchDatabases {
        do throws(CloudError) {
            return BenchDatabases(server: try settings.location(url), password: try settings.password())
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.invalidInput
        }
    }

    /// A new, empty database named after `purpose` (lower-case letters).
    func make(_ purpose: String) throws -> PostgresLocation {
        let name = "\(prefix)_\(purpose)"
        try administer("CREATE DATABASE \(name)")
        made.append(name)
        var location = server
        location.database = name
        return location
    }

    /// Drops every database this run made; a failure is reported, not thrown,
    /// so that it cannot hide the run's own error.
    ///
    /// The run's own connections are closed by now, but an autovacuum worker
    /// may be in the database. Plain `DROP DATABASE` stops such a worker
    /// itself, where `WITH (FORCE)` would need the right to signal the
    /// superuser's processes; so plain is tried a few times first.
    func dropAll() {
        for name in made.reversed() {
            var failure: (any Error)?
            for attempt in 0..<6 {
                do {
                    try administer(attempt < 5 ? "DROP DATABASE IF EXISTS \(name)" : "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
                    failure = nil
                    break
                } catch {
                    failure = error
                    Thread.sleep(forTimeInterval: 0.2)
                }
            }
            if let failure {
                Output.error("warning: could not drop the benchmark database \(name) (drop it by hand): \(failure)")
            }
        }
        made = []
    }

    /// A pool of `size` connections to `location`, looking names up in the
    /// cloud store's schema.
    func pool(_ location: PostgresLocation, size: Int = 1) -> PostgresPool {
        PostgresPool(location: location, password: password, size: size, statementTimeout: .seconds(600), searchPath: "sightline")
    }

    private func administer(_ statement: String) throws {
        let admin = PostgresPool(location: server, password: password, size: 1)
        defer { admin.close() }
        try admin.withSession { try $0.executeScript(statement) }
    }
}
