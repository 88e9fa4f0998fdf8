import CloudCore
import CloudSQLite
import Foundation
import IndexModel
import PostgresNIO
import SyncWire

extension PostgresValue {
    /// An epoch or seq, which every parse bounds by `WireLimits.maximumPosition`.
    static func position<Position: Identifier>(_ value: Position) -> PostgresValue where Position.RawValue == UInt64 {
        .int64(Int64(clamping: value.rawValue))
    }
}

extension PostgresCloud {
    /// The columns `logRow` reads, in its order.
    static let logColumns = """
        app, seq, device, epoch, first_seq, last_seq, accepted_from, codec, uncompressed_length, digest, payload, received_at
        """

    /// A cloud log row selected with `logColumns` first, every field checked
    /// (`StoredLogRow`): a row someone edited is a `corruptLog` error.
    static func logRow(_ row: PostgresRowValues) throws(CloudError) -> StoredLogRow {
        let app: AppID
        let seq: Int64
        do {
            app = AppID(try row[0].text)
            seq = try row[1].int64
        } catch {
            throw CloudError(.corruptLog, "a cloud log row has no app name or no integer seq")
        }
        func field<Value>(_ read: () throws(CloudError) -> Value) throws(CloudError) -> Value {
            do {
                return try read()
            } catch {
                throw CloudError(.corruptLog, "app \(app) log seq \(seq): \(error.message)")
            }
        }
        return try StoredLogRow(app: app, seq: seq, device: DeviceID(field { () throws(CloudError) in try row.text(2, "device") }),
                                epoch: field { () throws(CloudError) in try row.integer(3, "epoch") },
                                firstSeq: field { () throws(CloudError) in try row.integer(4, "first_seq") },
                                lastSeq: field { () throws(CloudError) in try row.integer(5, "last_seq") },
                                acceptedFrom: field { () throws(CloudError) in try row.integer(6, "accepted_from") },
                                codec: field { () throws(CloudError) in try row.integer(7, "codec") },
                                uncompressedLength: field { () throws(CloudError) in try row.integer(8, "uncompressed_length") },
                                digest: field { () throws(CloudError) in try row.bytes(9, "digest") },
                                payload: field { () throws(CloudError) in try row.bytes(10, "payload") },
                                receivedAt: field { () throws(CloudError) in try row.integer(11, "received_at") })
    }

    /// A `hashes` row's values from column `from` on: hash, live_votes,
    /// voters, views, shown, engaged, wanted_seq, has_content.
    static func hashRow(_ row: PostgresRowValues, from first: Int) throws(CloudError) -> WorkingSet.HashRow {
        let hash = try row.optionalBytes(first, "hashes.hash")
        if let hash, hash.count != PublicHash.byteCount {
            throw CloudError(.corruptStore, "hashes.hash is \(hash.count) bytes, not \(PublicHash.byteCount)")
        }
        return WorkingSet.HashRow(hash: hash, liveVotes: try row.count(first + 1, "hashes.live_votes"),
                                  voters: try row.count(first + 2, "hashes.voters"), views: try row.count(first + 3, "hashes.views"),
                                  shown: try row.count(first + 4, "hashes.shown"), engaged: try row.count(first + 5, "hashes.engaged"),
                                  wantedSeq: try row.optionalInteger(first + 6, "hashes.wanted_seq"),
                                  hasContent: try row.integer(first + 7, "hashes.has_content") != 0)
    }

    /// A `votes` row's values from column `from` on: token, live,
    /// signal_day, day_views, day_shown, day_engaged.
    static func voteRow(_ row: PostgresRowValues, from first: Int) throws(CloudError) -> WorkingSet.VoteRow {
        WorkingSet.VoteRow(token: try row.bytes(first, "votes.token"), live: try row.integer(first + 1, "votes.live") != 0,
                           day: try row.integer(first + 2, "votes.signal_day"),
                           used: Popularity(views: UInt64(try row.count(first + 3, "votes.day_views")),
                                            shown: UInt64(try row.count(first + 4, "votes.day_shown")),
                                            engaged: UInt64(try row.count(first + 5, "votes.day_engaged"))))
    }

    /// Writes what a frame's fold changed, with its log row, in one
    /// statement: the changed hashes and votes as they now are, the offers
    /// and public content that went or came, the app's wanted seq, the
    /// device's epochs, the pages recorded, and the reports added to the
    /// sketch with the allowances they spent.
    static func write(_ rows: WorkingSet, logRow: [PostgresValue]?, session: PostgresSession) throws {
        let log = logRow ?? Array(repeating: .null, count: 13)
        let hashes = rows.changedHashes.compactMap { key in rows.hashes[key].map { (key, $0) } }
        let votes = rows.changedVotes.compactMap { key in rows.votes[key].map { (key, $0) } }
        var droppedOffers: [(key: Data, voter: Data)] = []
        var keptOffers: [(key: Data, voter: Data, digest: Data)] = []
        for key in rows.changedOffers {
            let now = rows.offers[key] ?? [:]
            for voter in (rows.loadedOffers[key] ?? [:]).keys where now[voter] == nil { droppedOffers.append((key, voter)) }
            for (voter, digest) in now where rows.loadedOffers[key]?[voter] != digest { keptOffers.append((key, voter, digest)) }
        }
        var droppedContent: [Data] = []
        var keptContent: [(key: Data, row: WorkingSet.ContentRow)] = []
        for (key, row) in rows.contents {
            if let row { keptContent.append((key, row)) } else { droppedContent.append(key) }
        }
        let pages = rows.pages.sorted { $0.key < $1.key }
        var epochs: [(device: DeviceID, epoch: Epoch, last: OutboxSeq)] = []
        for (device, held) in rows.epochs {
            for (epoch, last) in held { epochs.append((device, epoch, last)) }
        }
        let cells = rows.sketch.sorted { $0.key < $1.key }
        let allowances = rows.changedAllowances.compactMap { device in rows.allowances[device].flatMap { $0 }.map { (device, $0) } }
        func bytes(_ values: some Sequence<Data>) -> PostgresValue { .byteaArray(values.map { [UInt8]($0) }) }
        let binds: [PostgresValue] = [.text(rows.app.rawValue)] + log + [
            bytes(hashes.map(\.0)), .optionalByteaArray(hashes.map(\.1.hash)), .int64Array(hashes.map(\.1.liveVotes)),
            .int64Array(hashes.map(\.1.voters)), .int64Array(hashes.map(\.1.views)), .int64Array(hashes.map(\.1.shown)),
            .int64Array(hashes.map(\.1.engaged)), .optionalInt64Array(hashes.map(\.1.wantedSeq)),
            .int64Array(hashes.map { $0.1.hasContent ? 1 : 0 }),
            bytes(votes.map(\.0.key)), bytes(votes.map(\.0.voter)), .byteaArray(votes.map(\.1.token)),
            .int64Array(votes.map { $0.1.live ? 1 : 0 }), .int64Array(votes.map(\.1.day)),
            .int64Array(votes.map { Int64(clamping: $0.1.used.views) }), .int64Array(votes.map { Int64(clamping: $0.1.used.shown) }),
            .int64Array(votes.map { Int64(clamping: $0.1.used.engaged) }),
            bytes(droppedOffers.map(\.key)), bytes(droppedOffers.map(\.voter)),
            bytes(keptOffers.map(\.key)), bytes(keptOffers.map(\.voter)), bytes(keptOffers.map(\.digest)),
            bytes(droppedContent),
            bytes(keptContent.map(\.key)), .textArray(keptContent.map(\.row.content.activityType)),
            .optionalTextArray(keptContent.map(\.row.content.title)),
            .byteaArray(keptContent.map { PublicKeywords.encode($0.row.content.keywords) }),
            .optionalTextArray(keptContent.map(\.row.content.contentDescription)),
            .optionalTextArray(keptContent.map(\.row.content.webpageURL)), .int64Array(keptContent.map(\.row.logSeq)),
            rows.wantedSeqChanged ? .int64(rows.wantedSeq) : .null,
            .textArray(epochs.map(\.device.rawValue)), .int64Array(epochs.map { Int64(clamping: $0.epoch.rawValue) }),
            .int64Array(epochs.map { Int64(clamping: $0.last.rawValue) }),
            .textArray(pages.map(\.key)), .byteaArray(pages.map(\.value.page.encoded)), .int64Array(pages.map(\.value.logSeq)),
            .int64Array(cells.map(\.key)), .int64Array(cells.map(\.value.reports)), .int64Array(cells.map(\.value.total)),
            .textArray(allowances.map(\.0.rawValue)), .int64Array(allowances.map(\.1.day)), .int64Array(allowances.map(\.1.used)),
        ]
        _ = try session.query(FrameWrite.self, binds)
    }

    /// `write`'s statement: data-modifying parts that touch distinct rows,
    /// so that one round trip writes a frame.
    enum FrameWrite: PostgresStatement {
        static let parameters: [PostgresDataType] =
            [.text, .int8, .text, .int8, .int8, .int8, .int8, .int8, .int8, .bytea, .bytea, .int8, .bytea, .bytea]  // $1…$14: the log row
            + [.byteaArray, .byteaArray] + Array(repeating: .int8Array, count: 7)  // hashes
            + Array(repeating: .byteaArray, count: 3) + Array(repeating: .int8Array, count: 5)  // votes
            + Array(repeating: .byteaArray, count: 6)  // offers dropped and kept, content dropped
            + [.byteaArray, .textArray, .textArray, .byteaArray, .textArray, .textArray, .int8Array]  // content kept
            + [.int8]  // wanted seq
            + [.textArray, .int8Array, .int8Array]  // epochs
            + [.textArray, .byteaArray, .int8Array]  // pages
            + Array(repeating: .int8Array, count: 3)  // sketch cells
            + [.textArray, .int8Array, .int8Array]  // allowances

        static let sql = """
            WITH log AS (
                INSERT INTO cloud_log (app, seq, device, epoch, first_seq, last_seq, accepted_from, codec, uncompressed_length,
                                       digest, payload, received_at, prev_hash, hash)
                SELECT $1::text, $2::int8, $3::text, $4::int8, $5::int8, $6::int8, $7::int8, $8::int8, $9::int8, $10::bytea, $11::bytea,
                       $12::int8, $13::bytea, $14::bytea
                WHERE $2::int8 IS NOT NULL
            ), hash_rows AS (
                INSERT INTO hashes (app, key, hash, live_votes, voters, views, shown, engaged, wanted_seq, has_content)
                SELECT $1, * FROM unnest($15::bytea[], $16::bytea[], $17::int8[], $18::int8[], $19::int8[], $20::int8[], $21::int8[],
                                         $22::int8[], $23::int8[])
                ON CONFLICT (app, key) DO UPDATE SET hash = excluded.hash, live_votes = excluded.live_votes,
                    voters = excluded.voters, views = excluded.views, shown = excluded.shown, engaged = excluded.engaged,
                    wanted_seq = excluded.wanted_seq, has_content = excluded.has_content
            ), vote_rows AS (
                INSERT INTO votes (app, key, voter, token, live, signal_day, day_views, day_shown, day_engaged)
                SELECT $1, * FROM unnest($24::bytea[], $25::bytea[], $26::bytea[], $27::int8[], $28::int8[], $29::int8[], $30::int8[],
                                         $31::int8[])
                ON CONFLICT (app, key, voter) DO UPDATE SET token = excluded.token, live = excluded.live,
                    signal_day = excluded.signal_day, day_views = excluded.day_views, day_shown = excluded.day_shown,
                    day_engaged = excluded.day_engaged
            ), dropped_offers AS (
                DELETE FROM content_offers o USING unnest($32::bytea[], $33::bytea[]) AS t(key, voter)
                WHERE o.app = $1 AND o.key = t.key AND o.voter = t.voter
            ), kept_offers AS (
                INSERT INTO content_offers (app, key, voter, digest)
                SELECT $1, * FROM unnest($34::bytea[], $35::bytea[], $36::bytea[])
                ON CONFLICT (app, key, voter) DO UPDATE SET digest = excluded.digest
            ), dropped_content AS (
                DELETE FROM public_content WHERE app = $1 AND key = ANY($37::bytea[])
            ), kept_content AS (
                INSERT INTO public_content (app, key, activity_type, title, keywords, description, url, log_seq)
                SELECT $1, * FROM unnest($38::bytea[], $39::text[], $40::text[], $41::bytea[], $42::text[], $43::text[], $44::int8[])
                ON CONFLICT (app, key) DO UPDATE SET activity_type = excluded.activity_type, title = excluded.title,
                    keywords = excluded.keywords, description = excluded.description, url = excluded.url, log_seq = excluded.log_seq
            ), wanted AS (
                INSERT INTO app_state (app, wanted_seq) SELECT $1, $45::int8 WHERE $45::int8 IS NOT NULL
                ON CONFLICT (app) DO UPDATE SET wanted_seq = excluded.wanted_seq
            ), epochs AS (
                INSERT INTO device_epochs (app, device, epoch, last_seq)
                SELECT $1, * FROM unnest($46::text[], $47::int8[], $48::int8[])
                ON CONFLICT (app, device, epoch) DO UPDATE SET last_seq = excluded.last_seq
            ), page_rows AS (
                INSERT INTO pages (app, url, page, log_seq)
                SELECT $1, * FROM unnest($49::text[], $50::bytea[], $51::int8[])
                ON CONFLICT (app, url) DO UPDATE SET page = excluded.page, log_seq = excluded.log_seq
            ), sketch_rows AS (
                INSERT INTO sketch_cells (app, cell, reports, total)
                SELECT $1, * FROM unnest($52::int8[], $53::int8[], $54::int8[])
                ON CONFLICT (app, cell) DO UPDATE SET reports = sketch_cells.reports + excluded.reports,
                    total = sketch_cells.total + excluded.total
            ), allowance_rows AS (
                INSERT INTO report_allowances (app, device, day, reports)
                SELECT $1, * FROM unnest($55::text[], $56::int8[], $57::int8[])
                ON CONFLICT (app, device) DO UPDATE SET day = excluded.day, reports = excluded.reports
            )
            SELECT 1
            """
    }
}
