import CloudCore
import CloudPostgres
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import PostgresTestSupport
import SyncWire
import Testing

/// A PostgreSQL server keeps its acks' content requests and the fold's rows
/// between frames while the app's log head says no other server changed the
/// projections (`KeptFold`); once another server has appended, the next
/// frame must read its rows afresh and its ack check every wanted hash again.
@Suite struct PostgresKeptFoldTests {
    @Test func aFrameAfterAnotherServersFoldReadsItsRowsAndWorksItsAckOutAfresh() throws {
        let database = try TestDatabase()
        let clock = ManualClock(harnessStart)
        func server() throws -> PostgresCloud {
            try PostgresCloud(at: database.location, password: database.password, options: PostgresCloudOptions(
                store: CloudOptions(clock: clock, random: SeededRandom(seed: 99), threshold: 2), poolSize: 2))
        }
        let first = try server()
        let second = try server()
        try first.registerApp(app, enrolmentSecret: enrolmentSecret)
        let x = try Sender(first, name: DeviceID("x"))
        let y = try Sender(first, name: DeviceID("y"))
        let wanted = PublicHash.of(app: app, activityType: "com.example.read", identity: "url:https://example.com/kept")
        #expect(x.requests(sending: .vote(wanted, token(1)), at: 1, to: first) == [])
        #expect(y.requests(sending: .vote(wanted, token(2)), at: 1, to: first) == [wanted], "the vote that reaches K asks its sender")
        #expect(x.requests(sending: .signal(wanted, Popularity(views: 1)), at: 2, to: first) == [wanted],
                "the first server remembers that it asks x")
        // The second server folds a withdrawal: the hash falls below K and is
        // no longer wanted, which the first server's memory did not see.
        #expect(y.requests(sending: .withdraw(wanted, token(2)), at: 2, to: second) == [])
        #expect(x.requests(sending: .signal(wanted, Popularity(views: 1)), at: 3, to: first) == [],
                "the first server checks afresh once the log head is not its own")
        #expect(x.requests(sending: .signal(wanted, Popularity(views: 1)), at: 4, to: first) == [])
        // Had the first server folded on the rows it kept, it would have
        // written the hash back with two live votes, wanted.
        let entry = try #require(try first.entry(app: app, hash: wanted))
        #expect(entry.liveVotes == 1 && !entry.isWanted && entry.popularity.views == 3)
        #expect(try first.projectionDigest() == second.rebuiltProjectionDigest())
    }
}

/// An enrolled device that writes its frames by hand, one message each.
private struct Sender {
    let name: DeviceID
    let key: [UInt8]

    init(_ cloud: any CloudStore, name: DeviceID) throws {
        self.name = name
        key = try cloud.enrol(app: app, device: name, enrolmentSecret: enrolmentSecret)
    }

    /// Sends `message` at epoch 1, `seq` to `cloud`; the ack's content
    /// requests, or nil when the reply is no ack.
    func requests(sending message: OutboxMessage, at seq: UInt64, to cloud: any CloudStore) -> [PublicHash]? {
        let record = OutboxRecord(position: OutboxPosition(epoch: Epoch(1), seq: OutboxSeq(seq)), message: message)
        let result = cloud.ingest(UploadFrame(app: app, device: name, records: [record], key: key).encoded)
        guard case .ack(let ack)? = try? CloudReply.decode(result.reply, device: name, key: key).reply else { return nil }
        return ack.contentRequests
    }
}
