import IndexModel
import LocalPrivacy
import Synchronization

/// The sketches a store built to estimate from, by app, each with the log
/// head and settings it was built at (`CloudStore.privateSketch(app:)`).
/// Building one reads every cell (up to k × m rows) and transforms it; a
/// search reads the app's log head instead, and builds again only when a
/// fold, another server's included, moved it, or the settings changed. The
/// head's chain hash names the log's whole content, so a restored store
/// with as many rows is not taken for the old one.
public final class SketchCache: Sendable {
    private struct Built {
        let head: CloudLogHead?
        let settings: PrivatePopularity
        let sketch: CountMeanSketch
    }

    private let built = Mutex<[AppID: Built]>([:])

    public init() {}

    /// The sketch of `app` built at `head` with `settings`, if it is kept.
    func sketch(app: AppID, head: CloudLogHead?, settings: PrivatePopularity) -> CountMeanSketch? {
        built.withLock { kept in
            guard let entry = kept[app], entry.head == head, entry.settings == settings else { return nil }
            return entry.sketch
        }
    }

    /// Keeps `sketch`, its transform made, as `app`'s at `head` with `settings`.
    func keep(_ sketch: CountMeanSketch, app: AppID, head: CloudLogHead?, settings: PrivatePopularity) {
        built.withLock { $0[app] = Built(head: head, settings: settings, sketch: sketch) }
    }
}
