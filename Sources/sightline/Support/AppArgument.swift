import ArgumentParser
import IndexModel

/// `--app NAME`: the name as given. The stores check it (1 to 256 bytes on
/// one line) where it is used, and say so in their own errors.
extension AppID: ExpressibleByArgument {
    public init?(argument: String) {
        self.init(argument)
    }
}
