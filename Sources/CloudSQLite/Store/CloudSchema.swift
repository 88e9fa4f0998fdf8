import CloudCore
import Foundation
import GRDB

/// The SQLite schema of a cloud store (`Journal/FORMAT.md`, "Cloud store").
/// The cloud log is the source of truth; the projections are a fold over it
/// that `CloudIndex.rebuildProjections()` can make again.
///
/// Every table but `cloud_meta` is keyed by app first, and nothing a frame
/// changes is shared between apps: each app has its own log chain and its
/// own wanted seqs. The PostgreSQL backend keeps the same tables, so a
/// snapshot of either restores into the other, and a distributed PostgreSQL
/// can place each app's rows together.
package enum CloudSchema {
    /// Versions 2 to 6 added columns and tables to the layout of version 1
    /// (`Format6`); version 7 keys every table by app, chains the cloud log
    /// per app, and gives each app its wanted seqs; version 8 adds the
    /// crawled pages (`pages`); version 9 each app's popularity mode
    /// (`apps.popularity`) and its private sketch (`sketch_cells`,
    /// `report_allowances`); version 10 purged log rows (`cloud_log.codec`
    /// `CloudLog.purgedCodec`), with no change of tables.
    package static let formatVersion = 10
    /// The first version with a chain per app.
    package static let perAppChainVersion = 7
    package static let application = "sightline-cloud-store"

    package static let metaDDL = """
        CREATE TABLE cloud_meta (key TEXT PRIMARY KEY, value ANY NOT NULL) STRICT;
        CREATE TABLE apps (
            app TEXT PRIMARY KEY,
            secret_hash BLOB NOT NULL,
            maximum_devices INTEGER,
            popularity BLOB
        );
        """

    /// Who may send, and the position of each device the last backup holds.
    package static let devicesDDL = """
        CREATE TABLE devices (
            app TEXT NOT NULL,
            device TEXT NOT NULL,
            key BLOB NOT NULL,
            enrolled_at INTEGER NOT NULL,
            backed_up_epoch INTEGER NOT NULL DEFAULT 0,
            backed_up_seq INTEGER NOT NULL DEFAULT 0,
            enrolment_proof BLOB,
            PRIMARY KEY (app, device)
        ) WITHOUT ROWID;
        """

    /// The cloud log, one chain per app, and the refused frames worth a look.
    package static let logDDL = """
        CREATE TABLE cloud_log (
            app TEXT NOT NULL,
            seq INTEGER NOT NULL,
            device TEXT NOT NULL,
            epoch INTEGER NOT NULL,
            first_seq INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            accepted_from INTEGER NOT NULL,
            codec INTEGER NOT NULL,
            uncompressed_length INTEGER NOT NULL,
            digest BLOB NOT NULL,
            payload BLOB NOT NULL,
            received_at INTEGER NOT NULL,
            prev_hash BLOB NOT NULL,
            hash BLOB NOT NULL,
            PRIMARY KEY (app, seq)
        );
        CREATE INDEX cloud_log_by_device ON cloud_log (app, device, epoch, last_seq);
        CREATE TABLE flags (
            app TEXT NOT NULL,
            device TEXT NOT NULL,
            epoch INTEGER NOT NULL,
            first_seq INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            reason TEXT NOT NULL,
            flagged_at INTEGER NOT NULL
        );
        """

    /// The projections, folded from the cloud log.
    package static let projectionDDL = """
        CREATE TABLE device_epochs (
            app TEXT NOT NULL,
            device TEXT NOT NULL,
            epoch INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            PRIMARY KEY (app, device, epoch)
        ) WITHOUT ROWID;
        CREATE TABLE app_state (
            app TEXT PRIMARY KEY,
            wanted_seq INTEGER NOT NULL
        ) WITHOUT ROWID;

        """ + countsDDL + contentOffersDDL + pagesDDL + sketchDDL

    /// The projections of each hash's counts, votes and public content, the
    /// same in every version since 3.
    package static let countsDDL = """
        CREATE TABLE hashes (
            app TEXT NOT NULL,
            key BLOB NOT NULL,
            hash BLOB,
            live_votes INTEGER NOT NULL,
            voters INTEGER NOT NULL,
            views INTEGER NOT NULL,
            shown INTEGER NOT NULL,
            engaged INTEGER NOT NULL,
            wanted_seq INTEGER,
            has_content INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (app, key)
        ) WITHOUT ROWID;
        CREATE INDEX hashes_wanted ON hashes (app, wanted_seq) WHERE wanted_seq IS NOT NULL;
        CREATE TABLE votes (
            app TEXT NOT NULL,
            key BLOB NOT NULL,
            voter BLOB NOT NULL,
            token BLOB NOT NULL,
            live INTEGER NOT NULL,
            signal_day INTEGER NOT NULL DEFAULT 0,
            day_views INTEGER NOT NULL DEFAULT 0,
            day_shown INTEGER NOT NULL DEFAULT 0,
            day_engaged INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (app, key, voter)
        ) WITHOUT ROWID;
        CREATE TABLE public_content (
            app TEXT NOT NULL,
            key BLOB NOT NULL,
            activity_type TEXT NOT NULL,
            title TEXT,
            keywords BLOB NOT NULL,
            description TEXT,
            url TEXT,
            log_seq INTEGER NOT NULL,
            PRIMARY KEY (app, key)
        ) WITHOUT ROWID;
        """

    /// Each live voter's offer of content for a wanted hash (`ContentRule`),
    /// from version 6.
    package static let contentOffersDDL = """

        CREATE TABLE content_offers (
            app TEXT NOT NULL,
            key BLOB NOT NULL,
            voter BLOB NOT NULL,
            digest BLOB NOT NULL,
            PRIMARY KEY (app, key, voter)
        ) WITHOUT ROWID;
        CREATE INDEX content_offers_by_digest ON content_offers (app, key, digest);
        """

    /// The pages the crawler recorded, by canonical URL (`CrawlerRule`), from
    /// version 8: the page as its message encodes it (`CrawledPage.encoded`),
    /// and the log row that recorded it.
    package static let pagesDDL = """

        CREATE TABLE pages (
            app TEXT NOT NULL,
            url TEXT NOT NULL,
            page BLOB NOT NULL,
            log_seq INTEGER NOT NULL,
            PRIMARY KEY (app, url)
        ) WITHOUT ROWID;
        """

    /// Each app's count-mean sketch of private reports (`ReportRule`), from
    /// version 9: per cell (hash function × m + Hadamard row) the reports
    /// counted and the sum of their signs; and what each device reported on
    /// its last day of reports.
    package static let sketchDDL = """

        CREATE TABLE sketch_cells (
            app TEXT NOT NULL,
            cell INTEGER NOT NULL,
            reports INTEGER NOT NULL,
            total INTEGER NOT NULL,
            PRIMARY KEY (app, cell)
        ) WITHOUT ROWID;
        CREATE TABLE report_allowances (
            app TEXT NOT NULL,
            device TEXT NOT NULL,
            day INTEGER NOT NULL,
            reports INTEGER NOT NULL,
            PRIMARY KEY (app, device)
        ) WITHOUT ROWID;
        """

    package static let projectionTables = ["device_epochs", "hashes", "votes", "public_content", "content_offers", "app_state", "pages",
                                   "sketch_cells", "report_allowances"]

    package static func create(_ db: Database, threshold: Int, voterSecret: [UInt8], createdAt: Int64) throws {
        try db.execute(sql: metaDDL + devicesDDL + logDDL + projectionDDL)
        let meta: [(String, any DatabaseValueConvertible)] = [
            ("application", application),
            ("format_version", formatVersion),
            ("threshold", threshold),
            ("voter_secret", Data(voterSecret)),
            ("created_at", createdAt),
        ]
        for (key, value) in meta {
            try db.execute(sql: "INSERT INTO cloud_meta (key, value) VALUES (?, ?)", arguments: [key, value])
        }
    }

    /// Brings a store of an older version to this one, in the caller's
    /// transaction; the caller folds the log into the projections again in
    /// the same transaction, since which rows the fold keeps changed with the
    /// versions (signals within allowances from version 3, agreed content
    /// from 6, per-app wanted seqs from 7, crawled pages from 8, private
    /// reports from 9).
    package static func migrate(_ db: Database, from version: Int) throws {
        if version < perAppChainVersion {
            try migrateToPerAppChains(db, from: version)
        } else {
            if version < 8 { try db.execute(sql: pagesDDL) }
            if version < 9 { try db.execute(sql: sketchDDL) }
        }
        if version < 9 {
            // Every app of an older store counts popularity exactly.
            try db.execute(sql: "ALTER TABLE apps ADD COLUMN popularity BLOB")
        }
        try db.execute(sql: "UPDATE cloud_meta SET value = ? WHERE key = 'format_version'", arguments: [formatVersion])
    }

    /// Brings a store of version 1 to 6 to the layout of this version, with
    /// its projections empty.
    ///
    /// The migration to version 7 first checks the version-6 log chain
    /// (`CloudLog.verifyFormat6Chain`) and refuses a store whose chain is
    /// broken, since it then chains the log anew per app: a broken log is
    /// never given a valid chain. A device's stream is then kept under its
    /// name in its app, whatever id version 6 gave it.
    private static func migrateToPerAppChains(_ db: Database, from version: Int) throws {
        try Format6.migrate(db, from: version)
        _ = try CloudLog.verifyFormat6Chain(db)
        var names: [String: (app: String, name: String)] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT device, app, name FROM devices") {
            let id: String = try Stored.column(row, 0, "devices.device")
            names[id] = (try Stored.column(row, 1, "devices.app of \(id)"), try Stored.column(row, 2, "devices.name of \(id)"))
        }
        try db.execute(sql: """
            DROP INDEX devices_by_name;
            DROP INDEX cloud_log_by_device;
            ALTER TABLE devices RENAME TO format6_devices;
            ALTER TABLE cloud_log RENAME TO format6_cloud_log;
            ALTER TABLE flags RENAME TO format6_flags;
            """)
        for table in Format6.projectionTables { try db.execute(sql: "DROP TABLE \(table)") }
        try db.execute(sql: devicesDDL + logDDL + projectionDDL)
        try db.execute(sql: """
            INSERT INTO devices (app, device, key, enrolled_at, backed_up_epoch, backed_up_seq, enrolment_proof)
            SELECT app, name, key, enrolled_at, backed_up_epoch, backed_up_seq, enrolment_proof FROM format6_devices
            """)
        try CloudLog.rechainFormat6Log(db, names: names)
        let flags = try Row.fetchAll(db, sql: "SELECT device, epoch, first_seq, last_seq, reason, flagged_at FROM format6_flags")
        for row in flags {
            let id: String = try Stored.column(row, 0, "flags.device")
            guard let owner = names[id] else { continue }
            try db.execute(sql: """
                INSERT INTO flags (app, device, epoch, first_seq, last_seq, reason, flagged_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [owner.app, owner.name, row[1], row[2], row[3], row[4], row[5]])
        }
        try db.execute(sql: """
            DROP TABLE format6_devices;
            DROP TABLE format6_cloud_log;
            DROP TABLE format6_flags;
            """)
    }

    /// The layout of versions 1 to 6: one log chain and one wanted seq for
    /// the whole store, and device streams kept under ids unique across
    /// apps. Kept to check and migrate stores and snapshots of those versions.
    package enum Format6 {
        package static let registryDDL = """
            CREATE TABLE cloud_meta (key TEXT PRIMARY KEY, value ANY NOT NULL) STRICT;
            CREATE TABLE apps (
                app TEXT PRIMARY KEY,
                secret_hash BLOB NOT NULL,
                maximum_devices INTEGER
            );
            CREATE TABLE devices (
                device TEXT PRIMARY KEY,
                app TEXT NOT NULL,
                key BLOB NOT NULL,
                enrolled_at INTEGER NOT NULL,
                requests_delivered INTEGER NOT NULL DEFAULT 0,
                requests_offered INTEGER NOT NULL DEFAULT 0,
                offered_at_epoch INTEGER NOT NULL DEFAULT 0,
                offered_at_seq INTEGER NOT NULL DEFAULT 0,
                backed_up_epoch INTEGER NOT NULL DEFAULT 0,
                backed_up_seq INTEGER NOT NULL DEFAULT 0,
                enrolment_proof BLOB,
                name TEXT
            );
            CREATE UNIQUE INDEX devices_by_name ON devices (app, name);
            CREATE TABLE cloud_log (
                seq INTEGER PRIMARY KEY,
                device TEXT NOT NULL,
                epoch INTEGER NOT NULL,
                first_seq INTEGER NOT NULL,
                last_seq INTEGER NOT NULL,
                accepted_from INTEGER NOT NULL,
                codec INTEGER NOT NULL,
                uncompressed_length INTEGER NOT NULL,
                digest BLOB NOT NULL,
                payload BLOB NOT NULL,
                received_at INTEGER NOT NULL,
                prev_hash BLOB NOT NULL,
                hash BLOB NOT NULL
            );
            CREATE INDEX cloud_log_by_device ON cloud_log (device, epoch, last_seq);
            CREATE TABLE flags (
                device TEXT NOT NULL,
                epoch INTEGER NOT NULL,
                first_seq INTEGER NOT NULL,
                last_seq INTEGER NOT NULL,
                reason TEXT NOT NULL,
                flagged_at INTEGER NOT NULL
            );
            """

        package static let projectionDDL = """
            CREATE TABLE device_epochs (
                device TEXT NOT NULL,
                epoch INTEGER NOT NULL,
                last_seq INTEGER NOT NULL,
                PRIMARY KEY (device, epoch)
            ) WITHOUT ROWID;
            CREATE TABLE fold_state (key TEXT PRIMARY KEY, value INTEGER NOT NULL);

            """ + countsDDL + contentOffersDDL

        package static let projectionTables = ["device_epochs", "hashes", "votes", "public_content", "fold_state", "content_offers"]

        /// The schema of a version-6 store, which a snapshot of version 1
        /// to 6 is checked against (each table some of these columns).
        package static func create(_ db: Database) throws {
            try db.execute(sql: registryDDL + projectionDDL)
        }

        /// Brings a store of version 1 to 5 to the layout of version 6,
        /// whose projections the migration to 7 then drops.
        package static func migrate(_ db: Database, from version: Int) throws {
            if version < 2 {
                try db.execute(sql: """
                    ALTER TABLE devices ADD COLUMN offered_at_epoch INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE devices ADD COLUMN offered_at_seq INTEGER NOT NULL DEFAULT 0;
                    """)
            }
            if version < 3 {
                try db.execute(sql: """
                    ALTER TABLE votes ADD COLUMN signal_day INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE votes ADD COLUMN day_views INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE votes ADD COLUMN day_shown INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE votes ADD COLUMN day_engaged INTEGER NOT NULL DEFAULT 0;
                    """)
            }
            if version < 4 {
                try db.execute(sql: """
                    ALTER TABLE apps ADD COLUMN maximum_devices INTEGER;
                    ALTER TABLE devices ADD COLUMN enrolment_proof BLOB;
                    """)
            }
            if version < 5 {
                // Every device enrolled before version 5 was unique across apps: its name is its id.
                try db.execute(sql: """
                    ALTER TABLE devices ADD COLUMN name TEXT;
                    UPDATE devices SET name = device;
                    CREATE UNIQUE INDEX devices_by_name ON devices (app, name);
                    """)
            }
            if version < 6 {
                try db.execute(sql: CloudSchema.contentOffersDDL)
            }
        }
    }
}
