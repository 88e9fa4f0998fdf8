import IndexModel

/// How a cloud store is opened: its injected clock and randomness (so a
/// simulation replays), K and the agreement (nil keeps the store's), read-only
/// or not, durability, and whether the process holds the file for itself.
public struct CloudOptions: Sendable {
    public var clock: any StoreClock
    public var random: any RandomSource
    /// K: the distinct devices that must hold a live vote for a public hash
    /// before the cloud asks for its content and shows it. Nil keeps the
    /// store's K (a new store gets `defaultThreshold`); another value changes
    /// it, which rebuilds the projections.
    public var threshold: Int?
    /// How many live voters must offer byte-identical content before it is
    /// public (`ContentRule`). Nil keeps the store's (a new store follows K);
    /// another value changes it, which rebuilds the projections.
    public var agreement: Int?
    public var readOnly: Bool
    /// `full` syncs the WAL on every commit, so an acknowledged frame survives
    /// power loss (the default, and what `cloud serve` uses); `normal` survives
    /// a process crash only, which is what the simulator models.
    public var durability: Durability
    /// The opening process is the store's only user while it holds it open
    /// (the simulator's cloud): SQLite takes its file locks once and keeps the
    /// WAL's index in heap memory instead of a shared-memory file, so a commit
    /// makes no locking calls. Another process cannot read the store until it
    /// is closed. Ignored when read-only.
    public var exclusive: Bool
    /// The memory this process gives the dictionaries its devices deflate
    /// frames against (`FrameDictionaries`); with 0 it holds none, and makes
    /// each one a frame names again from the device's log rows.
    public var frameDictionaryBytes: Int
    /// How much of the store's file SQLite reads in place through a memory
    /// map (`PRAGMA mmap_size`, which Debian's SQLite caps at 2 GiB) instead
    /// of copying each page it reads into its page cache; 0 maps nothing.
    /// A mapped store keeps a small page cache (8 MiB, not 64): the
    /// simulator's cloud, whose file is in memory, maps it. Pages the
    /// write-ahead log holds are still read from the log. The PostgreSQL
    /// backend ignores it.
    public var mapBytes: Int

    /// How far a committed frame survives: `full` syncs the write-ahead log at
    /// every commit (an ack is never lost to power loss); `normal` at checkpoints
    /// only (survives a process crash).
    public enum Durability: Sendable {
        case full
        case normal
    }

    public init(clock: any StoreClock = SystemClock(), random: any RandomSource = SystemRandom(),
                threshold: Int? = nil, agreement: Int? = nil, readOnly: Bool = false, durability: Durability = .full,
                exclusive: Bool = false, frameDictionaryBytes: Int = FrameDictionaries.defaultCapacityBytes,
                mapBytes: Int = 0) {
        self.clock = clock
        self.random = random
        self.threshold = threshold
        self.agreement = agreement
        self.readOnly = readOnly
        self.durability = durability
        self.exclusive = exclusive
        self.frameDictionaryBytes = frameDictionaryBytes
        self.mapBytes = mapBytes
    }

    public static let defaultThreshold = 5
}
