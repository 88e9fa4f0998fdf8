import Foundation
import GRDB
import SQLiteSupport
import Testing

@Suite struct MappedGrowthTests {
    private static func fileSize(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? -1
    }

    /// A mapped store that grows many checkpoints long keeps its file a
    /// whole number of chunks, its write-ahead log stays about a checkpoint
    /// long (the hook still checkpoints), and it reads back every row it
    /// wrote: the cloud's store grows this way.
    @Test func aMappedFileGrowsByChunksWithItsMapOverTheWholeFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mapped-growth-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path + "/grows.sqlite"
        let chunk = 1 << 20
        var configuration = Configuration()
        configuration.journalMode = .wal
        configuration.prepareDatabase { db in
            _ = try Int.fetchOne(db, sql: "PRAGMA mmap_size = \(1 << 30)")
            try MappedGrowth.install(db, chunkBytes: Int32(chunk))
        }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try queue.write { db in try db.execute(sql: "CREATE TABLE rows (n INTEGER PRIMARY KEY, payload BLOB NOT NULL)") }
        let rounds = 48, perRound = 250
        var largestLog = 0, grown = 0
        for round in 0..<rounds {
            try queue.write { db in
                let insert = try db.makeStatement(sql: "INSERT INTO rows (payload) VALUES (?)")
                for n in 0..<perRound {
                    try insert.execute(arguments: [Data(repeating: UInt8((round * perRound + n) % 251), count: 1_000)])
                }
            }
            // Reads through the map, as the cloud's ingest does.
            _ = try queue.read { db in try Int.fetchOne(db, sql: "SELECT sum(length(payload)) FROM rows") }
            largestLog = max(largestLog, try MappedGrowthTests.fileSize(path + "-wal"))
            let size = try MappedGrowthTests.fileSize(path)
            #expect(size % chunk == 0, "after round \(round) the file is \(size) bytes")
            if size > chunk { grown += 1 }
        }
        // The file grew through checkpoints, not only at its creation.
        #expect(grown >= rounds / 2)
        // 12 MB written against a log checkpointed at 1,000 pages (4 MiB).
        #expect(largestLog < 6 << 20, "the write-ahead log grew to \(largestLog) bytes")
        try queue.close()
        let size = try MappedGrowthTests.fileSize(path)
        #expect(size >= rounds * perRound * 1_000 && size % chunk == 0, "closed, the file is \(size) bytes")
        let reader = try DatabaseQueue(path: path, configuration: { var read = Configuration(); read.readonly = true; return read }())
        let (check, count, wrong) = try reader.read { db in
            // Row n holds 1,000 bytes of (n - 1) mod 251.
            (try String.fetchOne(db, sql: "PRAGMA integrity_check"), try Int.fetchOne(db, sql: "SELECT count(*) FROM rows"),
             try Int.fetchOne(db, sql: """
                SELECT count(*) FROM rows
                WHERE length(payload) != 1000 OR hex(substr(payload, 1, 1)) != printf('%02X', (n - 1) % 251)
                   OR hex(substr(payload, 1000, 1)) != printf('%02X', (n - 1) % 251)
                """))
        }
        #expect(check == "ok")
        #expect(count == rounds * perRound)
        #expect(wrong == 0)
    }
}
