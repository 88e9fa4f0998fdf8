import Foundation
import IndexModel
import SyncWire

/// A hash's row as the fold reads it after changing it.
package struct FoldHashState: Hashable, Sendable {
    /// Devices whose vote for the hash is live.
    package var liveVotes: Int64
    /// Whether its content is being asked for (it has a wanted seq).
    package var isWanted: Bool
    /// Whether `public_content` holds its agreed content.
    package var hasContent: Bool

    package init(liveVotes: Int64, isWanted: Bool, hasContent: Bool) {
        self.liveVotes = liveVotes
        self.isWanted = isWanted
        self.hasContent = hasContent
    }
}

/// The projection rows the fold reads and writes, as one backend keeps them:
/// `CloudFold` decides what changes (`ThresholdRule`, `ContentRule`,
/// `PopularityRule`) and says it through these calls, so every backend
/// folds by the same code. Rows are named by app, the hash's key and, for a
/// device's own rows, its pseudonym (`CloudSecrets`).
///
/// The SQLite backend runs a kept statement for each call; a backend that
/// folds in memory answers from rows it loaded for the frame and writes
/// them back in bulk. Either way a call sees every earlier call's change.
package protocol FoldRows {
    /// Adds a live vote with `token` for the voter unless it has one for the
    /// hash; returns whether it added it.
    func insertVote(app: AppID, key: Data, voter: [UInt8], token: [UInt8]) throws -> Bool
    /// The voter's vote for the hash, if it ever voted.
    func readVote(app: AppID, key: Data, voter: [UInt8]) throws -> FoldMemory.Vote?
    func setVote(live: Bool, app: AppID, key: Data, voter: [UInt8]) throws
    /// Keeps what the voter has added to the hash on its allowance's day.
    func writeAllowance(_ allowance: PopularityRule.Allowance, app: AppID, key: Data, voter: [UInt8]) throws
    /// Adds `live` to the hash's live votes and `voters` to its distinct
    /// voters (a hash without a row gets one with those counts), and returns
    /// its state after.
    func changeVotes(app: AppID, key: Data, live: Int64, voters: Int64) throws -> FoldHashState?
    /// The hash's state, if it has a row.
    func hashState(app: AppID, key: Data) throws -> FoldHashState?
    /// Adds counted signals to the hash, each sum saturating at
    /// `PopularityRule.maximumCount`.
    func addSignals(_ counted: Popularity, app: AppID, key: Data) throws
    /// Keeps the raw hash beside its key (the hash reached K live votes).
    func keepRawHash(_ hash: PublicHash, app: AppID, key: Data) throws
    /// Gives the hash the app's next wanted seq.
    func markWanted(app: AppID, key: Data) throws
    /// Deletes the hash's public content.
    func dropContent(app: AppID, key: Data) throws
    /// Deletes every offer of content for the hash.
    func dropOffers(app: AppID, key: Data) throws
    /// Deletes the voter's offer of content for the hash.
    func dropOffer(app: AppID, key: Data, voter: [UInt8]) throws
    /// Forgets the raw hash, the wanted seq and the content mark (the hash fell below K).
    func clearPublicState(app: AppID, key: Data) throws
    /// Keeps `digest` as the voter's offer for the hash, replacing its
    /// earlier one, and returns how many offers of the hash have that digest.
    func offer(_ digest: Data, app: AppID, key: Data, voter: [UInt8]) throws -> Int64
    /// Makes `content` the hash's public content (completed by log row
    /// `logSeq`): it is no longer wanted, and its offers go.
    func publish(_ content: PublicContent, app: AppID, key: Data, logSeq: Int64) throws
    /// Keeps `page` as the app's crawled page at its URL (recorded by log
    /// row `logSeq`), replacing an earlier one.
    func recordPage(_ page: CrawledPage, app: AppID, logSeq: Int64) throws
    /// Whether the app has a crawled page at `url`.
    func hasPage(app: AppID, url: String) throws -> Bool
    /// Deletes every offer of the app's wanted hashes (offers exist only
    /// for those) and returns the hashes that had any.
    func dropOffersOfWanted(app: AppID) throws -> [PublicHash]
    /// What the device reported on its last day of private reports, if it
    /// ever reported.
    func reportAllowance(app: AppID, device: DeviceID) throws -> ReportRule.Allowance?
    func writeReportAllowance(_ allowance: ReportRule.Allowance, app: AppID, device: DeviceID) throws
    /// Adds counted private reports to the app's sketch, by cell.
    func addReports(_ cells: [Int64: SketchCell], app: AppID) throws
    /// Keeps `lastSeq` as the last seq held of the device's epoch.
    func recordEpoch(app: AppID, device: DeviceID, epoch: Epoch, lastSeq: OutboxSeq) throws
}
