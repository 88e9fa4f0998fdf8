import GRDB
import SQLiteSupport

extension SearchIndex {
    /// One posting of a word's impact-ordered list: a document and minus its key.
    struct RankedPosting: Equatable {
        var rank: Double
        var doc: Int64

        /// Best first: by rank (minus the key), then by document.
        static func precedes(_ left: RankedPosting, _ right: RankedPosting) -> Bool {
            left.rank != right.rank ? left.rank < right.rank : left.doc < right.doc
        }
    }

    /// A row of `search_runs`: consecutive postings of one word, keyed by the
    /// first. The runs of a word never overlap, so reading them in key order
    /// reads the word's postings best first.
    ///
    /// `entries` holds each posting of the run in order: its rank as a
    /// little-endian IEEE 754 double, then its document as an unsigned LEB128
    /// number (of the document's two's-complement bits).
    enum Run {
        /// Postings in a run written whole. A run that grows past twice this
        /// is split into runs of about this many, so that a run stays within
        /// the part of a row a 4 KiB page holds.
        static let length = 32

        static func encode(_ postings: ArraySlice<RankedPosting>) -> [UInt8] {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(postings.count * 11)
            for posting in postings {
                withUnsafeBytes(of: posting.rank.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
                var doc = UInt64(bitPattern: posting.doc)
                while doc >= 0x80 {
                    bytes.append(UInt8(doc & 0x7F) | 0x80)
                    doc >>= 7
                }
                bytes.append(UInt8(doc))
            }
            return bytes
        }

        /// Appends the run's postings to `postings`; a run that ends inside a
        /// posting, or whose document number is longer than 64 bits, is an error
        /// naming the word.
        static func decode(_ bytes: UnsafeRawBufferPointer, term: String,
                           into postings: inout [RankedPosting]) throws(SearchIndexError) {
            var offset = 0
            while offset < bytes.count {
                guard offset + 9 <= bytes.count else {
                    throw SearchIndexError("a search_runs row of the word \"\(term)\" ends inside a posting, at byte \(offset)")
                }
                let pattern = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                offset += 8
                var doc: UInt64 = 0
                var shift: UInt64 = 0
                while true {
                    guard offset < bytes.count else {
                        throw SearchIndexError("a search_runs row of the word \"\(term)\" ends inside a document number")
                    }
                    let byte = bytes[offset]
                    offset += 1
                    guard shift < 64, shift < 63 || byte & 0x7E == 0 else {
                        throw SearchIndexError("a search_runs row of the word \"\(term)\" holds a document number over 64 bits")
                    }
                    doc |= UInt64(byte & 0x7F) << shift
                    if byte & 0x80 == 0 { break }
                    shift += 7
                }
                postings.append(RankedPosting(rank: Double(bitPattern: pattern), doc: Int64(bitPattern: doc)))
            }
        }

        /// The postings of a run, without `removing` and with `adding` (both in
        /// order), in order. A removal the run lacks changes nothing.
        static func merge(_ postings: [RankedPosting], removing: ArraySlice<RankedPosting>,
                          adding: ArraySlice<RankedPosting>) -> [RankedPosting] {
            var merged: [RankedPosting] = []
            merged.reserveCapacity(postings.count + adding.count)
            var removal = removing.startIndex
            var addition = adding.startIndex
            for posting in postings {
                while removal < removing.endIndex, RankedPosting.precedes(removing[removal], posting) { removal += 1 }
                if removal < removing.endIndex, removing[removal] == posting {
                    removal += 1
                    continue
                }
                while addition < adding.endIndex, RankedPosting.precedes(adding[addition], posting) {
                    merged.append(adding[addition])
                    addition += 1
                }
                merged.append(posting)
            }
            merged.append(contentsOf: adding[addition...])
            return merged
        }
    }

    /// Writes words' posting changes into `search_runs`: a word with no runs
    /// gets its postings as runs of `Run.length`; otherwise each change goes
    /// into the run whose range holds it, one read and one write per run
    /// changed, however many of its postings change.
    struct RunWriter {
        private let db: Database
        /// The run that holds a posting's place and the run after it: the last
        /// run keyed at or before the posting, when there is one.
        private let around: DirectStatement
        /// The first two runs of a word, for a posting before all of them.
        private let firstTwo: DirectStatement
        private let replace: DirectStatement
        private let insert: DirectStatement
        private let delete: DirectStatement

        init(_ db: Database) throws {
            self.db = db
            around = try DirectStatement(db, """
                SELECT rank, doc, entries FROM search_runs WHERE term = ?1 AND (rank, doc) >= (
                    SELECT rank, doc FROM search_runs WHERE term = ?1 AND (rank, doc) <= (?2, ?3)
                    ORDER BY rank DESC, doc DESC LIMIT 1)
                ORDER BY rank, doc LIMIT 2
                """)
            firstTwo = try DirectStatement(db, "SELECT rank, doc, entries FROM search_runs WHERE term = ? ORDER BY rank, doc LIMIT 2")
            replace = try DirectStatement(db, "UPDATE search_runs SET entries = ? WHERE term = ? AND rank = ? AND doc = ?")
            insert = try DirectStatement(db, "INSERT INTO search_runs (term, rank, doc, entries) VALUES (?, ?, ?, ?)")
            delete = try DirectStatement(db, "DELETE FROM search_runs WHERE term = ? AND rank = ? AND doc = ?")
        }

        /// Applies one word's changes, each list in order. `isNew` says the
        /// word has no runs yet (a full build), which spares the reads.
        func write(term: String, removing: ArraySlice<RankedPosting>, adding: ArraySlice<RankedPosting>, isNew: Bool) throws {
            if isNew {
                try insertRuns(term, adding)
                return
            }
            var removals = removing
            var additions = adding
            while let first = earliest(removals.first, additions.first) {
                guard let (run, next) = try runs(around: first, of: term) else {
                    // The word has no runs, so there is nothing to remove.
                    try insertRuns(term, additions)
                    return
                }
                func belongs(_ posting: RankedPosting) -> Bool { next.map { RankedPosting.precedes(posting, $0) } ?? true }
                let removed = removals.prefix(while: belongs)
                let added = additions.prefix(while: belongs)
                guard !removed.isEmpty || !added.isEmpty else {
                    throw SearchIndexError("the search_runs rows of the word \"\(term)\" are out of order")
                }
                removals = removals.dropFirst(removed.count)
                additions = additions.dropFirst(added.count)
                let merged = Run.merge(run.postings, removing: removed, adding: added)
                if merged.first == run.key, merged.count <= 2 * Run.length {
                    replace.bind(1, Run.encode(merged[...]))
                    bindKey(replace, term, run.key, from: 2)
                    try replace.execute()
                } else {
                    bindKey(delete, term, run.key, from: 1)
                    try delete.execute()
                    try insertRuns(term, merged[...])
                }
            }
        }

        /// The run whose range holds `posting` (the first run, when the posting
        /// comes before all of them), and the key of the run after it; nil when
        /// the word has no runs.
        private func runs(around posting: RankedPosting, of term: String)
            throws -> (run: (key: RankedPosting, postings: [RankedPosting]), next: RankedPosting?)? {
            around.bind(1, term)
            around.bind(2, posting.rank)
            around.bind(3, posting.doc)
            if let found = try read(around, term: term) { return found }
            firstTwo.bind(1, term)
            return try read(firstTwo, term: term)
        }

        private func read(_ statement: DirectStatement, term: String)
            throws -> (run: (key: RankedPosting, postings: [RankedPosting]), next: RankedPosting?)? {
            defer { statement.reset() }
            guard try statement.step() else { return nil }
            let key = RankedPosting(rank: statement.double(0), doc: statement.int64(1))
            var postings: [RankedPosting] = []
            try statement.withBlob(2) { bytes in try Run.decode(bytes, term: term, into: &postings) }
            let next = try statement.step() ? RankedPosting(rank: statement.double(0), doc: statement.int64(1)) : nil
            return ((key, postings), next)
        }

        /// Writes `postings` (in order) as new runs: one when they fit in a run
        /// that may grow, otherwise runs of about `Run.length`.
        private func insertRuns(_ term: String, _ postings: ArraySlice<RankedPosting>) throws {
            guard !postings.isEmpty else { return }
            let count = postings.count <= 2 * Run.length ? 1 : (postings.count + Run.length - 1) / Run.length
            var start = postings.startIndex
            for index in 0..<count {
                let end = postings.startIndex + postings.count * (index + 1) / count
                insert.bind(1, term)
                insert.bind(2, postings[start].rank)
                insert.bind(3, postings[start].doc)
                insert.bind(4, Run.encode(postings[start..<end]))
                try insert.execute()
                start = end
            }
        }

        private func bindKey(_ statement: DirectStatement, _ term: String, _ key: RankedPosting, from index: Int32) {
            statement.bind(index, term)
            statement.bind(index + 1, key.rank)
            statement.bind(index + 2, key.doc)
        }

        private func earliest(_ left: RankedPosting?, _ right: RankedPosting?) -> RankedPosting? {
            guard let left, let right else { return left ?? right }
            return RankedPosting.precedes(right, left) ? right : left
        }
    }
}
