import Foundation
import GRDB
import IndexModel

/// The SQLite schema of a device store, version 5. `Journal/FORMAT.md` documents
/// every table; the event journal is the source of truth and every other table is
/// a projection that `rebuildProjections()` can make again from it.
enum StoreSchema {
    /// Version 2 added the outbox (the privacy projection) and the sync state.
    /// Version 3 dropped the FTS5 tables `items_fts` and `activities_fts`: the
    /// ranked search index (`search_*`) answers every text search, and the FTS5
    /// tables were written on every call and never read. Version 4 added the
    /// popularity mode the store learned from acks and its privacy budget
    /// ledger (`privacyDDL`). Version 5 chains the journal over payload
    /// hashes (`JournalChain`) and adds `event_journal.purged_payload_hash`,
    /// so a purged row still verifies.
    static let formatVersion = 5
    /// The first version whose journal is chained over payload hashes.
    static let chainOverPayloadHashesSince = 5
    /// The versions this build opens. A writable open brings an older one to
    /// `formatVersion` (`migrate`); a read-only open reads it as it is.
    static let readableVersions = 2...formatVersion
    static let application = "sightline-device-store"

    static let journalDDL = """
        CREATE TABLE event_journal (
            seq INTEGER PRIMARY KEY,
            epoch INTEGER NOT NULL,
            call INTEGER NOT NULL,
            kind INTEGER NOT NULL,
            time INTEGER NOT NULL,
            payload BLOB NOT NULL,
            prev_hash BLOB NOT NULL,
            hash BLOB NOT NULL,
            purged_payload_hash BLOB
        );
        """

    static let projectionDDL = """
        CREATE TABLE items (
            rowid INTEGER PRIMARY KEY,
            item_id TEXT NOT NULL,
            index_name TEXT NOT NULL,
            domain TEXT,
            expires INTEGER,
            title TEXT,
            display_name TEXT,
            content_description TEXT,
            keywords TEXT,
            content_url TEXT,
            ranking_hint REAL,
            attributes BLOB NOT NULL,
            changed_seq INTEGER NOT NULL,
            UNIQUE (item_id, index_name)
        );
        CREATE INDEX items_by_domain ON items (index_name, domain);
        CREATE INDEX items_by_expiry ON items (expires) WHERE expires IS NOT NULL;
        CREATE INDEX items_by_url ON items (content_url) WHERE content_url IS NOT NULL;
        CREATE TABLE activities (
            rowid INTEGER PRIMARY KEY,
            activity_key TEXT NOT NULL UNIQUE,
            activity_type TEXT NOT NULL,
            title TEXT,
            keywords TEXT,
            content_description TEXT,
            webpage_url TEXT,
            related TEXT,
            weak_related TEXT,
            domain TEXT,
            persistent_id TEXT,
            expires INTEGER,
            eligible_search INTEGER NOT NULL,
            eligible_handoff INTEGER NOT NULL,
            eligible_public INTEGER NOT NULL,
            related_deleted INTEGER NOT NULL,
            view_count INTEGER NOT NULL,
            first_seen INTEGER NOT NULL,
            last_seen INTEGER NOT NULL,
            payload BLOB NOT NULL,
            changed_seq INTEGER NOT NULL
        );
        CREATE INDEX activities_by_related ON activities (related) WHERE related IS NOT NULL;
        CREATE INDEX activities_by_domain ON activities (domain) WHERE domain IS NOT NULL;
        CREATE INDEX activities_by_expiry ON activities (expires) WHERE expires IS NOT NULL;
        CREATE TABLE client_states (
            index_name TEXT PRIMARY KEY,
            state BLOB NOT NULL,
            changed_seq INTEGER NOT NULL
        );
        CREATE TABLE engagement (
            ref TEXT PRIMARY KEY,
            shown INTEGER NOT NULL,
            engaged INTEGER NOT NULL
        );
        CREATE TABLE public_activities (
            activity_key TEXT PRIMARY KEY,
            hash BLOB NOT NULL,
            refs TEXT NOT NULL,
            related TEXT,
            live INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX public_activities_by_hash ON public_activities (hash);
        CREATE INDEX public_activities_by_related ON public_activities (related) WHERE related IS NOT NULL;
        CREATE TABLE public_hashes (hash BLOB PRIMARY KEY, live INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE public_refs (
            ref TEXT NOT NULL,
            hash BLOB NOT NULL,
            activities INTEGER NOT NULL,
            PRIMARY KEY (ref, hash)
        ) WITHOUT ROWID;
        CREATE TABLE public_votes (hash BLOB PRIMARY KEY) WITHOUT ROWID;
        CREATE TABLE reindex_requests (
            seq INTEGER PRIMARY KEY,
            index_name TEXT NOT NULL,
            identifiers BLOB,
            acknowledged_seq INTEGER
        );
        CREATE TABLE outbox (
            epoch INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            journal_seq INTEGER NOT NULL,
            message BLOB NOT NULL,
            PRIMARY KEY (epoch, seq)
        ) WITHOUT ROWID;

        """ + privacyDDL

    /// The popularity mode the store learned (no row: exact), and the ledger
    /// of the ε its private reports spent, in thousandths, per day of its own
    /// clock (days since 1970): projections of `popularityModeLearned` and
    /// `resultEngaged` events, from version 4.
    static let privacyDDL = """
        CREATE TABLE popularity_mode (id INTEGER PRIMARY KEY CHECK (id = 1), mode BLOB NOT NULL);
        CREATE TABLE privacy_budget (day INTEGER PRIMARY KEY, spent INTEGER NOT NULL);
        """

    /// Where this device stands with the cloud. Not a projection: acks write it,
    /// and a rebuild keeps it.
    static let syncDDL = """
        CREATE TABLE sync_state (key TEXT PRIMARY KEY, value ANY NOT NULL) STRICT;
        """

    /// Indexes that serve only the write path's own lookups (domain deletions,
    /// the expiry sweep, search by URL), never the fold's. A scratch replay
    /// drops them: the projections' rows do not depend on indexes, and keeping
    /// them costs every insert and delete of a million-event replay.
    static let indexesOutsideTheFold = ["items_by_domain", "items_by_expiry", "items_by_url",
                                        "activities_by_domain", "activities_by_expiry"]

    /// The projection tables, in the order `rebuildProjections()` empties them.
    static let projectionTables = ["items", "activities", "client_states", "engagement",
                                   "public_activities", "public_hashes", "public_refs", "public_votes", "outbox",
                                   "reindex_requests", "popularity_mode", "privacy_budget"]

    /// The FTS5 tables of a version 2 store and their shadow tables, which
    /// `migrate` drops.
    static let droppedFullTextTables: Set<String> = Set(["items_fts", "activities_fts"].flatMap { table in
        [table] + ["data", "idx", "content", "docsize", "config"].map { table + "_" + $0 }
    })

    /// Brings a store of an older readable version to this one, in the
    /// caller's write transaction.
    static func migrate(_ db: Database, from version: Int) throws {
        if version < 3 {
            // Dropped with secure_delete on (Debian's default), so their copies
            // of the private text are zeroed, not left in free pages.
            try db.execute(sql: "DROP TABLE IF EXISTS items_fts; DROP TABLE IF EXISTS activities_fts")
        }
        if version < 4 {
            // A store of an older version never learned a mode: it counts exactly and spent nothing.
            try db.execute(sql: privacyDDL)
        }
        if version < 5 {
            try db.execute(sql: "ALTER TABLE event_journal ADD COLUMN purged_payload_hash BLOB")
            try chainOverPayloadHashes(db)
        }
        try db.execute(sql: "UPDATE store_meta SET value = ? WHERE key = 'format_version'", arguments: [formatVersion])
    }

    /// Chains every row of a journal of version 4 or older again, over
    /// payload hashes, after checking its old chain row by row. A row that
    /// does not verify stops the migration: an altered journal is never
    /// chained anew as if it were sound.
    static func chainOverPayloadHashes(_ db: Database) throws {
        var previousOld = ChainHash.genesis
        var previousNew = ChainHash.genesis
        var expected = Seq(1)
        // Each row's new previous hash and hash, 64 bytes a row, written once the scan is done.
        var links: [UInt8] = []
        let rows = try JournalRows(db, from: Seq(1))
        do {
            defer { rows.finish() }
            while let record = try rows.next() {
                guard record.seq == expected, record.previousHash == previousOld,
                      record.recomputedHash(.overPayloads) == record.hash else {
                    throw DeviceStoreError(.corruptJournal, """
                        seq \(record.seq): the journal does not verify (`journal verify` opens the store read-only and                         names the problem), so it cannot be chained anew for store format \(formatVersion)
                        """, seq: record.seq)
                }
                let hash = ChainHash.of(previous: previousNew, epoch: record.epoch, seq: record.seq, call: record.call,
                                        time: record.time, kind: record.kind, payloadHash: ChainHash.ofPayload(record.payload))
                links += previousNew.bytes
                links += hash.bytes
                previousOld = record.hash
                previousNew = hash
                expected = expected.next
            }
        }
        let update = try db.makeStatement(sql: "UPDATE event_journal SET prev_hash = ?, hash = ? WHERE seq = ?")
        for row in 0..<links.count / 64 {
            let start = row * 64
            try update.execute(arguments: [Data(links[start..<start + 32]), Data(links[start + 32..<start + 64]), Int64(row + 1)])
        }
    }

    /// A new store: its tables, the search index's among them (empty, so
    /// that a first search changes no schema), and its identity.
    static func create(_ db: Database, deviceID: DeviceID, app: AppID, voteSecret: [UInt8], createdAt: Int64) throws {
        try createTables(db)
        try db.execute(sql: SearchIndex.ddl)
        try insertMeta(db, deviceID: deviceID, app: app, voteSecret: voteSecret, createdAt: createdAt)
    }

    static func createTables(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE store_meta (key TEXT PRIMARY KEY, value ANY NOT NULL) STRICT;
            """)
        try db.execute(sql: journalDDL)
        try db.execute(sql: projectionDDL)
        try db.execute(sql: syncDDL)
    }

    /// Writes a new store's identity to `store_meta`. `cached`: its
    /// statement stays on the connection, for a pooled connection that
    /// makes every new in-memory store; a store's own connection makes one
    /// store and keeps no statement of it.
    static func insertMeta(_ db: Database, deviceID: DeviceID, app: AppID, voteSecret: [UInt8], createdAt: Int64,
                           cached: Bool = false) throws {
        let meta: [(String, any DatabaseValueConvertible)] = [
            ("application", application),
            ("format_version", formatVersion),
            ("device_id", deviceID),
            ("epoch", 1),
            ("created_at", createdAt),
            ("app", app),
            ("vote_secret", Data(voteSecret)),
        ]
        let sql = "INSERT INTO store_meta (key, value) VALUES (?, ?)"
        let insert = try cached ? db.cachedStatement(sql: sql) : db.makeStatement(sql: sql)
        for (key, value) in meta {
            try insert.execute(arguments: [key, value])
        }
    }
}

extension DeviceStore {
    /// The format of the stores this build writes; it opens older ones it
    /// can bring up to it.
    public static var formatVersion: Int { StoreSchema.formatVersion }
}
