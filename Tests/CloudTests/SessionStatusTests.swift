import CloudCore
import DeviceStore
import Foundation
import IndexModel
import SyncWire
import Testing

@Suite struct SessionStatusTests {
    /// An in-memory store keeps its sync status and its write memos (the
    /// journal's and outbox's heads, the earliest expiry) across a session's
    /// acks, and reads its new status in the ack's transaction: after every
    /// session, and after the calls that follow it (which send, and sweep
    /// what expired), the store says what a fresh read of its outbox says,
    /// and its journal still verifies.
    @Test func aSessionsAcksLeaveTheStoreAsAFreshReadFindsIt() throws {
        let harness = try SyncHarness()
        let store = try harness.addDevice()
        func expectAgreement(_ step: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            // What the uploader would read next: every message after the acknowledged position.
            let status = try store.syncStatus()
            let unsent = try store.pendingOutbox(after: status.acknowledged, limit: 10_000)
            #expect(status.pending == unsent.count && status.head == unsent.last?.position ?? status.acknowledged,
                    "the status after \(step): \(status), with \(unsent.count) messages unsent", sourceLocation: sourceLocation)
            #expect(try store.verifyJournal().isValid, "the journal after \(step)", sourceLocation: sourceLocation)
        }
        for round in 0..<5 {
            let url = "https://example.com/recipe/\(round)"
            try store.record(UserActivity(activityType: "com.example.recipe", title: "Recipe \(round)", webpageURL: url,
                                          expirationDate: harness.clock.now().adding(milliseconds: 1_500), eligibleForSearch: true,
                                          eligibleForPublicIndexing: true, persistentIdentifier: "r\(round)"))
            try store.recordEngaged(ref: url)
            let results = try harness.sync(store)
            #expect(!results.isEmpty && results.allSatisfy { if case .accepted = $0.outcome { true } else { false } })
            try expectAgreement("session \(round)")
            #expect(try store.syncStatus().pending == 0, "the session sent everything")
            harness.clock.advance(byMilliseconds: 1_000)
            try store.recordShown(ref: url)
            try expectAgreement("the call after session \(round)")
        }
        #expect(try store.activities().map(\.activity.persistentIdentifier) == ["r4"], "the calls after the acks swept what expired")
    }
}
