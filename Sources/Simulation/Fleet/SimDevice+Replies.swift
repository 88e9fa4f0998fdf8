import DeviceStore
import IndexModel
import SyncWire

/// A device taking the cloud's reply: the device's own half, which touches
/// only the device and so runs where its calls run (`Simulator.takeReply`).
extension SimDevice {
    /// What the device made of a reply, for the event loop to act on
    /// `Simulator.replyProcessing` later: the session after it, the
    /// driver's next action, and what the loop records.
    struct TakenReply {
        let token: UInt64
        let session: SyncRun
        let action: SyncAction
        var marks: [RecoveryPath] = []
        var findings: [String] = []
        var epochReuses = 0
        /// Hashes the device stated its vote for again.
        var votesRestated = 0
    }

    /// Purges what is due (`DeviceStore.purge`) and notes whether a public
    /// activity still waits for the cloud's backup.
    func purge() throws {
        noteWaiting(try store.purge())
    }

    func noteWaiting(_ report: PurgeReport) {
        purgeWaitsForCloud = report.activitiesWaiting.contains { $0.reason == .cloud }
    }

    /// Takes `bytes`, the reply to the request `session` had in flight: the
    /// store records the ack (or rewinds, or moves its epoch), the oracle
    /// follows what the store journaled, and the session says what to do
    /// next, at the device's time now. Leaves the result in `takenReply`.
    func take(reply bytes: [UInt8], session: SyncRun, token: UInt64, catalogue: Catalogue) throws {
        var session = session
        let before = session.uploader.acknowledged
        let durableBefore = session.uploader.durable
        let requestsBefore = session.report.contentRequests
        let advancesBefore = session.report.epochAdvances
        let recoveredBefore = session.report.messagesRecovered
        let popularityBefore = session.uploader.popularity
        let reindexBefore = session.report.reindexRequests.count
        let now = clock.now()
        let next = try store.perform(session.received(bytes, now: now), in: &session, now: now)
        var marks: [RecoveryPath] = []
        var findings: [String] = []
        var epochReuses = 0
        var votesRestated = 0
        if session.report.messagesRecovered > recoveredBefore { marks.append(.recoveryFromJournal) }
        if session.uploader.popularity != popularityBefore {
            // The store journaled the mode first, a write of its own with its expiry sweep.
            expected[epoch, default: []].append(model.sweep(now: now))
            model.learn(session.uploader.popularity)
        }
        if session.report.contentRequests > requestsBefore {
            // Journaling the requests was a write of its own, with its expiry sweep.
            expected[epoch, default: []].append(model.sweep(now: now))
        }
        for request in session.report.reindexRequests.dropFirst(reindexBefore) where !request.hashes.isEmpty || request.more {
            // Journaling the answer was a write of its own, with its expiry sweep.
            if let restated = model.restate(request, now: now, catalogue: catalogue) {
                expected[epoch, default: []].append(restated)
                marks.append(.votesReindexed)
                votesRestated += request.hashes.count
            } else {
                findings.append("device \(number) was asked to state its vote again for a hash no catalogue entry has")
            }
        }
        if session.uploader.acknowledged < before { marks.append(.cloudRegression) }
        if session.report.epochAdvances > advancesBefore {
            let followed = try followEpochAdvance(cloudHead: session.uploader.acknowledged, catalogue: catalogue)
            findings += followed.findings
            if followed.reused { epochReuses += 1 }
            if followed.advanced { marks.append(.epochAdvance) }
        } else if session.uploader.acknowledged.epoch > epoch {
            findings.append("""
                device \(number) writes in epoch \(epoch), but the cloud holds it through \
                \(session.uploader.acknowledged) (its clock ran back past an earlier restore) and it did not move its epoch above
                """)
        }
        // Only an ack that moves the watermark tells the device anything:
        // a restored store starts from the watermark of its backup, which
        // a cloud restored from an older backup may no longer hold.
        if session.uploader.durable > durableBefore {
            durableSeen[session.uploader.durable.epoch] = max(durableSeen[session.uploader.durable.epoch] ?? .beforeFirst,
                                                              session.uploader.durable.seq)
            // The cloud's backup now holds more of what the device sent: a
            // public activity deleted before it may be purged now.
            if purgeWaitsForCloud { try purge() }
        }
        takenReply = TakenReply(token: token, session: session, action: next,
                                marks: marks, findings: findings, epochReuses: epochReuses, votesRestated: votesRestated)
    }

    /// The device moved its epoch above `cloudHead`, where the cloud holds it
    /// through (its clock ran back past an earlier restore, or an earlier
    /// incarnation used its epoch). By the rule of docs/SYNC.md ("Epochs") the
    /// messages of its old epoch, none of which the cloud holds, keep their
    /// seqs in the new one: the oracle moves them too.
    private func followEpochAdvance(cloudHead: OutboxPosition, catalogue: Catalogue) throws
        -> (findings: [String], reused: Bool, advanced: Bool) {
        let advanced = try store.journalHead().epoch
        guard advanced > cloudHead.epoch, advanced > epoch else {
            let finding = """
                device \(number) moved its epoch from \(epoch) to \(advanced), not above \
                \(cloudHead.epoch), the newest epoch the cloud holds of it
                """
            epoch = advanced
            return ([finding], false, false)
        }
        var findings: [String] = []
        let reused = expected[advanced] != nil
        if reused {
            findings.append("""
                device \(number) moved its epoch \(epoch) to \(advanced), which it had already used: \
                (epoch, seq) positions repeat
                """)
        }
        // The messages the store moved are the last ones of its old epoch
        // (the cloud holds the others there, `Rejection.ended`): the oracle
        // moves as many of the calls' messages, which must be the same ones.
        let moved = try store.outboxEntries(after: OutboxPosition(epoch: advanced, seq: .beforeFirst))
            .filter {
                switch $0.message {
                case .content, .contentWithheld: false
                default: true
                }
            }
            .map { CloudModel.expected($0.message, catalogue) }
        let old = expected.removeValue(forKey: epoch) ?? []
        if let (kept, carried) = SimDevice.split(old.map(Array.init), moving: moved) {
            if kept.contains(where: { !$0.isEmpty }) { expected[epoch] = MessageGroups(kept) }
            expected[advanced] = MessageGroups(carried)
        } else {
            findings.append("""
                device \(number) moved \(moved.count) message(s) from epoch \(epoch) to \(advanced) \
                that \(SimDevice.notTheLast) of that epoch
                """)
            expected[advanced] = old
        }
        epoch = advanced
        return (findings, reused, true)
    }
}
