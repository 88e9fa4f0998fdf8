import ArgumentParser
import CloudCore
import CloudPostgres
import CloudSQLite
import Foundation
import IndexModel
import Simulation

/// `--db` for a cloud store: a SQLite file, or a PostgreSQL database by URL,
/// with what a PostgreSQL store needs besides (`PostgresOptions`).
struct CloudStoreOption: ParsableArguments {
    @Option(name: .customLong("db"), help: ArgumentHelp(
        "The cloud store: a SQLite file, or a PostgreSQL database as postgres://USER@HOST:PORT/DATABASE (password from PGPASSWORD or --password-file).",
        valueName: "path-or-url"))
    var path: String?

    @Option(name: .long, help: ArgumentHelp("Instead of --db: a run's folder (simulate or drill --out), whose cloud store this is.",
                                            valueName: "dir"))
    var run: String?

    @OptionGroup(title: "PostgreSQL") var postgres: PostgresOptions

    func validate() throws {
        try RunFolder.validate(path: path, run: run, device: nil, devices: false, what: "cloud store")
        if PostgresLocation.isPostgresURL(db) { try Self.validatePostgresURL(db, option: "--db") }
    }

    /// The store's file or URL, as `--db` gave it or the run's manifest names it.
    var db: String { RunFolder.resolved(path: path, run: run, device: nil) }

    /// Checks that `url`, given to `option`, is a PostgreSQL URL a store can be
    /// opened at; `what` says what the option takes instead when it is not one.
    static func validatePostgresURL(_ url: String, option: String, otherwise what: String? = nil) throws {
        guard PostgresLocation.isPostgresURL(url) else {
            throw ValidationError("\(option) takes a postgres:// URL" + (what.map { " (\($0))" } ?? ", not \(url)"))
        }
        do {
            _ = try PostgresLocation(parsing: url)
        } catch {
            throw ValidationError("\(option): \(error.message)")
        }
    }

    /// `--db` for messages: a URL is shown without a password (it never has one).
    var displayName: String { db }

    func open(readOnly: Bool, threshold: Int? = nil, agreement: Int? = nil) throws -> any CloudStore {
        try CloudStoreOption.open(db, postgres: postgres.settings,
                                  options: CloudOptions(threshold: threshold, agreement: agreement, readOnly: readOnly))
    }

    /// Opens the cloud store `db` names (exit 3 with the reason when it cannot be opened).
    static func open(_ db: String, postgres: PostgresSettings, options: CloudOptions) throws -> any CloudStore {
        do throws(CloudError) {
            if PostgresLocation.isPostgresURL(db) {
                let location = try postgres.location(db)
                return try PostgresCloud(at: location, password: try postgres.password(), options: postgres.options(store: options))
            }
            return try CloudIndex(at: .file(db), options: options)
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.storeUnavailable
        }
    }
}

/// What opening a PostgreSQL cloud store takes besides its URL: its
/// password (never on the command line), the pool's size, the statement
/// timeout and how long to wait for the database at the start.
struct PostgresOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "With a postgres:// --db: a file (mode 600) whose first line is the password (else PGPASSWORD, else SIGHTLINE_POSTGRES_PASSWORD_FILE).",
        valueName: "path"))
    var passwordFile: String?

    @Option(name: .long, help: ArgumentHelp("With a postgres:// --db: the most connections this process opens.", valueName: "count"))
    var poolSize: Int = 4

    @Option(name: .long, help: ArgumentHelp(
        "With a postgres:// --db: the longest one statement may run before PostgreSQL cancels it.", valueName: "seconds"))
    var statementTimeout: Int = 30

    @Option(name: .long, help: ArgumentHelp(
        "With a postgres:// --db: how long opening the store keeps trying to reach the database before giving up (exit 3).",
        valueName: "seconds"))
    var connectTimeout: Int = 10

    func validate() throws {
        guard (1...1000).contains(poolSize) else { throw ValidationError("--pool-size must be between 1 and 1000") }
        guard (1...86_400).contains(statementTimeout) else {
            throw ValidationError("--statement-timeout must be between 1 and 86400 seconds")
        }
        guard (1...3600).contains(connectTimeout) else {
            throw ValidationError("--connect-timeout must be between 1 and 3600 seconds")
        }
    }

    var settings: PostgresSettings {
        PostgresSettings(passwordFile: passwordFile, poolSize: poolSize, statementTimeout: statementTimeout,
                         connectTimeout: connectTimeout)
    }
}

/// `PostgresOptions` as values, for commands that open a cloud store without the options.
struct PostgresSettings {
    var passwordFile: String?
    var poolSize = 4
    var statementTimeout = 30
    var connectTimeout = 10

    func location(_ url: String) throws(CloudError) -> PostgresLocation {
        do {
            return try PostgresLocation(parsing: url)
        } catch {
            throw CloudError(.invalidOption, error.message)
        }
    }

    /// The password: `--password-file`, else `PGPASSWORD`, else the file
    /// `SIGHTLINE_POSTGRES_PASSWORD_FILE` names (as `tools/postgres` prints it).
    func password(environment: [String: String] = ProcessInfo.processInfo.environment) throws(CloudError) -> String? {
        do {
            if passwordFile == nil, environment["PGPASSWORD"]?.isEmpty ?? true,
               let file = environment["SIGHTLINE_POSTGRES_PASSWORD_FILE"], !file.isEmpty {
                return try PostgresPassword.load(file: file, environment: environment)
            }
            return try PostgresPassword.load(file: passwordFile, environment: environment)
        } catch {
            throw CloudError(.invalidOption, error.message)
        }
    }

    func options(store: CloudOptions) -> PostgresCloudOptions {
        PostgresCloudOptions(store: store, poolSize: poolSize, statementTimeout: .seconds(statementTimeout),
                             connectTimeout: .seconds(connectTimeout))
    }
}

/// `--stores` of `simulate` and `drill restore`: whether the device stores
/// live in memory or in files. A run's digest depends on it
/// (`SimulationOptions.storesInFiles`), so a replay says it.
struct StoresOption: ParsableArguments {
    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case memory, files
    }

    @Option(name: .long, help: ArgumentHelp(
        "Where the device stores live: memory, or files (in a scratch folder, removed after; --out keeps them, so it means files). The digest depends on it: a restore journals its backup's SHA-256.",
        valueName: "memory|files"))
    var stores: Kind?

    /// Checks the choice against `--out`, which keeps the stores' files.
    func validate(out: String?) throws {
        if out != nil, stores == .memory { throw ValidationError("--out keeps the device stores' files: it does not take --stores memory") }
    }

    var inFiles: Bool { stores == .files }
}

/// `--cloud-db` of `simulate` and `drill restore`: the embedded cloud's
/// store in an empty PostgreSQL database instead of a SQLite file.
struct CloudDatabaseOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "Keep the embedded cloud's store in this empty PostgreSQL database (postgres://USER@HOST:PORT/DATABASE; password from PGPASSWORD or --password-file); the run and its digest are the same.",
        valueName: "url"))
    var cloudDB: String?

    @Option(name: .long, help: ArgumentHelp("With --cloud-db: a file (mode 600) whose first line is the PostgreSQL password.",
                                            valueName: "path"))
    var passwordFile: String?

    func validate() throws {
        if let cloudDB {
            try CloudStoreOption.validatePostgresURL(cloudDB, option: "--cloud-db")
        } else if passwordFile != nil {
            throw ValidationError("--password-file goes with --cloud-db")
        }
    }

    /// The database with its password, or nil without `--cloud-db` (exit 2 when the password cannot be read).
    func database() throws -> (any CloudDatabase)? {
        guard let cloudDB else { return nil }
        let settings = PostgresSettings(passwordFile: passwordFile)
        do throws(CloudError) {
            return PostgresCloudDatabase(location: try settings.location(cloudDB), password: try settings.password())
        } catch {
            Output.error("error: \(error.commandLineMessage)")
            throw ExitStatus.invalidInput
        }
    }
}
