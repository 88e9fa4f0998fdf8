import IndexModel

/// A database server that keeps a cloud store, as a host that runs the
/// cloud in its own process sees it: it opens the store, drops it, and
/// restores a backup into it. The simulator takes its PostgreSQL cloud
/// through this seam (`simulate --cloud-db`), so it links no database driver;
/// the command line gives it `PostgresCloudDatabase`.
public protocol CloudDatabase: Sendable, CustomStringConvertible {
    /// Whether the database holds a cloud store already.
    func holdsStore() throws(CloudError) -> Bool
    /// Opens the store, made on first use, with at most `connections` connections.
    func open(options: CloudOptions, connections: Int) throws(CloudError) -> any CloudStore
    /// Closes a store `open` returned, as a crashed process would leave it.
    func close(_ store: any CloudStore)
    /// Drops the store and everything it holds.
    func dropStore() throws(CloudError)
    /// Loads the cloud snapshot at `snapshot` into the database (which holds
    /// no store), cut back to `through` when given, with files staged in
    /// `staging`; the backup is checked as it is loaded.
    func restore(snapshot: String, through: Timestamp?, staging: String, options: CloudOptions) throws(CloudError)
}
