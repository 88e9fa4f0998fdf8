import CloudCore
import Foundation
import IndexModel

/// A PostgreSQL database as a `CloudDatabase`: what the simulator's
/// embedded cloud keeps its store in with `simulate --cloud-db`.
public struct PostgresCloudDatabase: CloudDatabase {
    public let location: PostgresLocation
    public let password: String?

    public init(location: PostgresLocation, password: String?) {
        self.location = location
        self.password = password
    }

    public var description: String { location.description }

    public func holdsStore() throws(CloudError) -> Bool {
        try PostgresCloud.holdsStore(at: location, password: password)
    }

    public func open(options: CloudOptions, connections: Int) throws(CloudError) -> any CloudStore {
        try PostgresCloud(at: location, password: password, options: PostgresCloudOptions(store: options, poolSize: connections))
    }

    public func close(_ store: any CloudStore) {
        (store as? PostgresCloud)?.close()
    }

    public func dropStore() throws(CloudError) {
        try PostgresCloud.dropStore(at: location, password: password)
    }

    public func restore(snapshot: String, through: Timestamp?, staging: String, options: CloudOptions) throws(CloudError) {
        try PostgresCloud.restore(snapshot: snapshot, to: location, password: password, through: through, staging: staging,
                                  options: PostgresCloudOptions(store: options))
    }
}
