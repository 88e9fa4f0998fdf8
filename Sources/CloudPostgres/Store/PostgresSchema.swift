import CloudCore
import CloudSQLite

/// The PostgreSQL schema of a cloud store: the tables of format version 10
/// (`Journal/FORMAT.md`, "Cloud store"), the same as the SQLite backend's,
/// in a schema of their own (`sightline`) so that the database may hold
/// other things. Text columns compare bytewise (`COLLATE "C"`), as SQLite's
/// do, so that both backends order rows, and digest them, alike.
///
/// Every table but `cloud_meta` is keyed by app first, and no transaction
/// of ingest or enrolment touches two apps, so a distributed PostgreSQL can
/// place each app's rows on one node (`docs/CLOUD.md`, "PostgreSQL").
package enum PostgresSchema {
    package static let name = "sightline"
    static let formatVersion = CloudSchema.formatVersion

    /// A key for `pg_advisory_xact_lock` held while a server looks for the
    /// schema and makes it, so that two servers starting on an empty
    /// database do not both make it.
    static let creationLock: Int64 = 0x5349_4748_544C_494E

    package static let ddl = """
        CREATE SCHEMA IF NOT EXISTS sightline;
        CREATE TABLE sightline.cloud_meta (
            key text COLLATE "C" PRIMARY KEY,
            value text NOT NULL
        );
        CREATE TABLE sightline.apps (
            app text COLLATE "C" PRIMARY KEY,
            secret_hash bytea NOT NULL,
            maximum_devices bigint,
            popularity bytea
        );
        CREATE TABLE sightline.devices (
            app text COLLATE "C" NOT NULL,
            device text COLLATE "C" NOT NULL,
            key bytea NOT NULL,
            enrolled_at bigint NOT NULL,
            backed_up_epoch bigint NOT NULL DEFAULT 0,
            backed_up_seq bigint NOT NULL DEFAULT 0,
            enrolment_proof bytea,
            PRIMARY KEY (app, device)
        );
        CREATE TABLE sightline.cloud_log (
            app text COLLATE "C" NOT NULL,
            seq bigint NOT NULL,
            device text COLLATE "C" NOT NULL,
            epoch bigint NOT NULL,
            first_seq bigint NOT NULL,
            last_seq bigint NOT NULL,
            accepted_from bigint NOT NULL,
            codec bigint NOT NULL,
            uncompressed_length bigint NOT NULL,
            digest bytea NOT NULL,
            payload bytea NOT NULL,
            received_at bigint NOT NULL,
            prev_hash bytea NOT NULL,
            hash bytea NOT NULL,
            PRIMARY KEY (app, seq)
        );
        ALTER TABLE sightline.cloud_log ALTER COLUMN payload SET STORAGE EXTERNAL;
        CREATE INDEX cloud_log_by_device ON sightline.cloud_log (app, device, epoch, last_seq);
        CREATE TABLE sightline.flags (
            app text COLLATE "C" NOT NULL,
            device text COLLATE "C" NOT NULL,
            epoch bigint NOT NULL,
            first_seq bigint NOT NULL,
            last_seq bigint NOT NULL,
            reason text NOT NULL,
            flagged_at bigint NOT NULL
        );
        CREATE TABLE sightline.device_epochs (
            app text COLLATE "C" NOT NULL,
            device text COLLATE "C" NOT NULL,
            epoch bigint NOT NULL,
            last_seq bigint NOT NULL,
            PRIMARY KEY (app, device, epoch)
        );
        CREATE TABLE sightline.hashes (
            app text COLLATE "C" NOT NULL,
            key bytea NOT NULL,
            hash bytea,
            live_votes bigint NOT NULL,
            voters bigint NOT NULL,
            views bigint NOT NULL,
            shown bigint NOT NULL,
            engaged bigint NOT NULL,
            wanted_seq bigint,
            has_content bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (app, key)
        ) WITH (fillfactor = 70);
        CREATE INDEX hashes_wanted ON sightline.hashes (app, wanted_seq) WHERE wanted_seq IS NOT NULL;
        CREATE TABLE sightline.votes (
            app text COLLATE "C" NOT NULL,
            key bytea NOT NULL,
            voter bytea NOT NULL,
            token bytea NOT NULL,
            live bigint NOT NULL,
            signal_day bigint NOT NULL DEFAULT 0,
            day_views bigint NOT NULL DEFAULT 0,
            day_shown bigint NOT NULL DEFAULT 0,
            day_engaged bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (app, key, voter)
        ) WITH (fillfactor = 70);
        CREATE TABLE sightline.public_content (
            app text COLLATE "C" NOT NULL,
            key bytea NOT NULL,
            activity_type text COLLATE "C" NOT NULL,
            title text COLLATE "C",
            keywords bytea NOT NULL,
            description text COLLATE "C",
            url text COLLATE "C",
            log_seq bigint NOT NULL,
            PRIMARY KEY (app, key)
        );
        CREATE TABLE sightline.content_offers (
            app text COLLATE "C" NOT NULL,
            key bytea NOT NULL,
            voter bytea NOT NULL,
            digest bytea NOT NULL,
            PRIMARY KEY (app, key, voter)
        );
        CREATE INDEX content_offers_by_digest ON sightline.content_offers (app, key, digest);
        CREATE TABLE sightline.app_state (
            app text COLLATE "C" PRIMARY KEY,
            wanted_seq bigint NOT NULL
        );
        """ + pagesDDL + ";\n" + sketchDDL

    /// The table version 8 added, which opening a store of version 7 makes.
    static let pagesDDL = """
        CREATE TABLE sightline.pages (
            app text COLLATE "C" NOT NULL,
            url text COLLATE "C" NOT NULL,
            page bytea NOT NULL,
            log_seq bigint NOT NULL,
            PRIMARY KEY (app, url)
        )
        """

    /// What version 9 added, which opening a store of version 8 makes: each
    /// app's popularity mode and its private sketch.
    static let sketchDDL = """
        CREATE TABLE sightline.sketch_cells (
            app text COLLATE "C" NOT NULL,
            cell bigint NOT NULL,
            reports bigint NOT NULL,
            total bigint NOT NULL,
            PRIMARY KEY (app, cell)
        );
        CREATE TABLE sightline.report_allowances (
            app text COLLATE "C" NOT NULL,
            device text COLLATE "C" NOT NULL,
            day bigint NOT NULL,
            reports bigint NOT NULL,
            PRIMARY KEY (app, device)
        )
        """

    /// The column version 9 added to `apps`.
    static let popularityColumnDDL = "ALTER TABLE sightline.apps ADD COLUMN popularity bytea"
}
