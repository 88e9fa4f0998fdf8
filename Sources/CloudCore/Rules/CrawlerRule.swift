import IndexModel
import SyncWire

/// The cloud's own stream, the same for every backend: the pages its crawler
/// recorded (`sightline cloud crawl`, `docs/CLOUD.md`, "Crawled pages") are
/// frames of the device `~crawler` in the app's log, so that rebuilds,
/// verification and snapshots cover them as they cover every device.
///
/// Device names beginning with `~` are the cloud's: no device may enrol one
/// (`EnrolmentRule`), a frame naming one is refused before any key is looked
/// up (`FrameAuthentication`), and the fold refuses a page message from any
/// other stream. So what a public activity shows from a page can come only
/// from an operator's crawl, never from a device.
public enum CrawlerRule {
    /// The crawler's stream in each app's log.
    public static let device = DeviceID("~crawler")

    /// Whether `device` is a name only the cloud uses.
    public static func isReserved(_ device: DeviceID) -> Bool {
        device.rawValue.hasPrefix("~")
    }

    /// Whether a page message from `device` may be folded.
    public static func mayRecordPages(_ device: DeviceID) -> Bool {
        device == CrawlerRule.device
    }
}
