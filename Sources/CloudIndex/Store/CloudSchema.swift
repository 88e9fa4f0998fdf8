import Foundation
import GRDB

/// The SQLite schema of a cloud store (`Journal/FORMAT.md`, "Cloud store"). The cloud log is the source of truth; the projections are a fold
/// over it that `CloudIndex.rebuildProjections()` can make again.
enum CloudSchema {
    /// Version 2 added `devices.offered_at_epoch` and `offered_at_seq`;
    /// version 3 each vote's signal allowance (`votes.signal_day`, `day_*`);
    /// version 4 `devices.enrolment_proof` and `apps.maximum_devices`;
    /// version 5 `devices.name`, so that device names are per app;
    /// version 6 `content_offers`, so that content is agreed.
    static let formatVersion = 6
    static let application = "sightline-cloud-store"

    /// Not projections: who may send, and what each device was last offered.
    static let registryDDL = """
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

    /// The projections, folded from the cloud log.
    static let projectionDDL = """
        CREATE TABLE device_epochs (
            device TEXT NOT NULL,
            epoch INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            PRIMARY KEY (device, epoch)
        ) WITHOUT ROWID;
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
        CREATE TABLE fold_state (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
        """ + contentOffersDDL

    /// Each live voter's offer of content for a wanted hash, as a keyed digest
    /// of the content (`ContentRule`).
    static let contentOffersDDL = """

        CREATE TABLE content_offers (
            app TEXT NOT NULL,
            key BLOB NOT NULL,
            voter BLOB NOT NULL,
            digest BLOB NOT NULL,
            PRIMARY KEY (app, key, voter)
        ) WITHOUT ROWID;
        CREATE INDEX content_offers_by_digest ON content_offers (app, key, digest);
        """

    static let projectionTables = ["device_epochs", "hashes", "votes", "public_content", "fold_state", "content_offers"]

    /// Brings a store of an older version to this one, in the caller's
    /// transaction. Returns whether the projections must be rebuilt: from
    /// version 3 on signals count only from live voters and within each
    /// device's daily allowance, and from version 6 on content is agreed, so
    /// older projections differ from a replay.
    static func migrate(_ db: Database, from version: Int) throws -> Bool {
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
            // Every device enrolled so far was unique across apps: its name is its id.
            try db.execute(sql: """
                ALTER TABLE devices ADD COLUMN name TEXT;
                UPDATE devices SET name = device;
                CREATE UNIQUE INDEX devices_by_name ON devices (app, name);
                """)
        }
        if version < 6 {
            try db.execute(sql: contentOffersDDL)
        }
        try db.execute(sql: "UPDATE cloud_meta SET value = ? WHERE key = 'format_version'", arguments: [formatVersion])
        return version < 6
    }

    static func create(_ db: Database, threshold: Int, voterSecret: [UInt8], createdAt: Int64) throws {
        try db.execute(sql: registryDDL)
        try db.execute(sql: projectionDDL)
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
}
