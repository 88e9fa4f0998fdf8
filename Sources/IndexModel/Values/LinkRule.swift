import Foundation

/// Which URLs may leave the cloud as links a client follows: a public item's
/// web page, a page's canonical URL and image are `http` or `https` with a
/// host; a deep link may also use an app's own scheme, but never one that
/// runs code or reads local files where the link is followed.
public enum LinkRule {
    /// Schemes no link may have, whatever an app declares.
    public static let refusedSchemes: Set<String> = ["javascript", "data", "vbscript", "file"]

    /// The URL's scheme, lowercase; nil when `text` is no absolute URL.
    public static func scheme(of text: String) -> String? {
        guard let scheme = URLComponents(string: text)?.scheme, !scheme.isEmpty else { return nil }
        return scheme.lowercased()
    }

    /// Whether `text` is an absolute `http` or `https` URL with a host.
    public static func isWeb(_ text: String) -> Bool {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https" else { return false }
        return components.host?.isEmpty == false
    }

    /// Whether `text` may be a deep link: a web URL, or one of `schemes`
    /// (an app's own) that is not a refused scheme.
    public static func isDeepLink(_ text: String, schemes: Set<String>) -> Bool {
        if isWeb(text) { return true }
        guard let scheme = scheme(of: text) else { return false }
        return schemes.contains(scheme) && !refusedSchemes.contains(scheme)
    }
}
