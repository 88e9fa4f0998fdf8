import Foundation

/// Where a PostgreSQL password comes from: a password file, or `PGPASSWORD`
/// in the environment. Never a URL, never a command-line argument.
///
/// The environment is a parameter, so that tests give their own instead of
/// changing the process's.
public enum PostgresPassword {
    /// The password: the first line of `file`, trimmed of surrounding white
    /// space, when a file is given; otherwise `PGPASSWORD` from `environment`;
    /// otherwise nil (for servers that trust the connection).
    ///
    /// The file must not be readable or writable by group or others, as
    /// libpq requires of its `.pgpass`, since it holds a secret.
    ///
    /// - Throws: ``PostgresFailure`` with code `.password` when the file cannot
    ///   be read, is open to others, or its first line is empty. The message
    ///   names the file, never its content.
    public static func load(
        file: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(PostgresFailure) -> String? {
        guard let file else {
            return environment["PGPASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
        }
        let attributes: [FileAttributeKey: Any]
        let data: Data
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: file)
            data = try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            throw PostgresFailure(.password, "cannot read the password file \(file): \(error.localizedDescription)")
        }
        if let permissions = attributes[.posixPermissions] as? NSNumber, permissions.intValue & 0o077 != 0 {
            let mode = String(permissions.intValue & 0o777, radix: 8)
            throw PostgresFailure(
                .password, "the password file \(file) has mode \(mode), open to other users: chmod 600 it")
        }
        let text = String(decoding: data, as: UTF8.self)
        let firstLine = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let password = firstLine.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !password.isEmpty else {
            throw PostgresFailure(.password, "the password file \(file) has an empty first line")
        }
        return password
    }
}
