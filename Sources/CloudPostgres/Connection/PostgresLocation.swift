/// Where a PostgreSQL database is: user, host, port, database and TLS mode,
/// parsed from a `postgres://` or `postgresql://` URL.
///
/// The accepted form is `postgres://USER@HOST[:PORT][/DATABASE][?sslmode=MODE]`:
/// the port defaults to 5432, the database to the user's name, the TLS mode to
/// `prefer` (as libpq's do); HOST is a name, an IPv4 address or a bracketed
/// IPv6 address; USER and DATABASE may be percent-encoded. A password in the
/// URL is refused: URLs end up on command lines, in shell history and in
/// logs. The password comes from `PGPASSWORD` or a password file instead
/// (``PostgresPassword``). `description` is the URL in its canonical form,
/// which never holds a password.
public struct PostgresLocation: Hashable, Sendable, CustomStringConvertible {
    /// Whether and how the connection is encrypted, as libpq's `sslmode` says.
    public enum TLSMode: String, Hashable, Sendable, CaseIterable {
        /// Plain TCP.
        case disable
        /// TLS when the server offers it, plain TCP otherwise; the server's
        /// certificate is not verified (libpq's `prefer`).
        case prefer
        /// TLS or no connection; the certificate is not verified (libpq's `require`).
        case require
    }

    public var user: String
    public var host: String
    public var port: Int
    public var database: String
    public var tls: TLSMode

    public init(user: String, host: String, port: Int = 5432, database: String, tls: TLSMode = .prefer) {
        self.user = user
        self.host = host
        self.port = port
        self.database = database
        self.tls = tls
    }

    /// Parses a URL of the form above.
    ///
    /// - Throws: ``PostgresFailure`` with code `.invalidLocation`, saying what is
    ///   wrong; its message repeats the URL only when it holds no password.
    public init(parsing url: String) throws(PostgresFailure) {
        func invalid(_ reason: String) -> PostgresFailure {
            PostgresFailure(.invalidLocation, "invalid PostgreSQL URL: \(reason)")
        }
        guard let schemeEnd = url.range(of: "://") else {
            throw invalid("expected postgres://USER@HOST:PORT/DATABASE")
        }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw invalid("the scheme must be postgres:// or postgresql://, not \(scheme)://")
        }
        var rest = Substring(url[schemeEnd.upperBound...])

        var parameters: Substring = ""
        if let question = rest.firstIndex(of: "?") {
            parameters = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        if rest.contains("#") { throw invalid("a fragment (#…) has no meaning here") }

        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        // The authority is USER@HOST:PORT; only the last @ separates the user.
        guard let at = rest.lastIndex(of: "@") else {
            throw invalid("no user: expected postgres://USER@HOST:PORT/DATABASE")
        }
        let userInfo = rest[..<at]
        let hostPort = rest[rest.index(after: at)...]
        if userInfo.contains(":") {
            throw PostgresFailure(
                .invalidLocation,
                "the PostgreSQL URL holds a password, which is refused: URLs end up in command lines and logs. "
                    + "Remove it from the URL and set PGPASSWORD or give a password file instead")
        }
        guard let user = Self.percentDecoded(userInfo), !user.isEmpty else {
            throw invalid("the user is empty or badly percent-encoded")
        }

        var host: Substring
        var portText: Substring?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else {
                throw invalid("an IPv6 host opens [ without closing it")
            }
            host = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            let after = hostPort[hostPort.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("unexpected text after the IPv6 host") }
                portText = after.dropFirst()
            }
        } else {
            if let colon = hostPort.firstIndex(of: ":") {
                host = hostPort[..<colon]
                portText = hostPort[hostPort.index(after: colon)...]
            } else {
                host = hostPort
            }
            let allowed = host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") }
            guard allowed else { throw invalid("the host may hold only letters, digits, '.', '-' and '_'") }
        }
        guard !host.isEmpty else { throw invalid("no host") }

        var port = 5432
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                let number = Int(portText), (1...65535).contains(number)
            else {
                throw invalid("the port must be a number from 1 to 65535")
            }
            port = number
        }

        var database = user
        if !path.isEmpty {
            guard !path.contains("/"), let decoded = Self.percentDecoded(path), !decoded.isEmpty else {
                throw invalid("the database must be one path component, percent-encoded where needed")
            }
            database = decoded
        }

        var tls = TLSMode.prefer
        if !parameters.isEmpty {
            for parameter in parameters.split(separator: "&", omittingEmptySubsequences: true) {
                let parts = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0])
                guard name == "sslmode" else {
                    throw invalid("unknown parameter '\(name)'; the only one accepted is sslmode")
                }
                guard parts.count == 2, let mode = TLSMode(rawValue: String(parts[1])) else {
                    let modes = TLSMode.allCases.map(\.rawValue).joined(separator: ", ")
                    throw invalid("sslmode must be one of \(modes)")
                }
                tls = mode
            }
        }
        self.init(user: user, host: String(host), port: port, database: database, tls: tls)
    }

    /// Whether `text` is meant as a PostgreSQL URL rather than a file path: it
    /// starts with `postgres://` or `postgresql://`, in any case. It may still
    /// fail to parse.
    public static func isPostgresURL(_ text: String) -> Bool {
        let lowered = text.prefix(13).lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// The URL, without a password (it never has one).
    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        var text = "postgres://\(Self.percentEncoded(user))@\(shownHost):\(port)/\(Self.percentEncoded(database))"
        if tls != .prefer { text += "?sslmode=\(tls.rawValue)" }
        return text
    }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func percentEncoded(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            let scalar = Unicode.Scalar(byte)
            let plain = byte < 0x80 && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-._~".unicodeScalars.contains(scalar))
            if plain {
                result.unicodeScalars.append(scalar)
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                result += byte < 0x10 ? "%0\(hex)" : "%\(hex)"
            }
        }
        return result
    }
}
