import Foundation
import NIOCore
import NIOPosix
import PostgresNIO

extension PostgresFailure {
    /// When the failure happened: opening a connection, or running a statement
    /// on an open one. A closed socket means "unreachable" in the first and
    /// "connection lost" in the second.
    enum Phase {
        case connecting
        case statement
    }

    /// The failure that an error from postgres-nio or NIO stands for.
    ///
    /// postgres-nio reports failures as `PSQLError`, which carries the
    /// server's ErrorResponse fields, read here by name. Its description is
    /// deliberately generic,
    /// so messages are built from those fields and from the code, never from
    /// the error's own description, and never include the statement or its
    /// bound values.
    static func from(_ error: any Error, phase: Phase, location: PostgresLocation) -> PostgresFailure {
        if let failure = error as? PostgresFailure { return failure }
        if let error = error as? PSQLError {
            return from(error, phase: phase, location: location)
        }
        if let error = error as? ChannelError {
            if case .connectTimeout(let amount) = error {
                return PostgresFailure(
                    .unreachable, "PostgreSQL at \(location) did not accept a connection within \(amount.nanoseconds / 1_000_000) ms")
            }
            return closed(phase: phase, location: location, cause: "\(error)")
        }
        if let connection = error as? NIOConnectionError, let first = connection.connectionErrors.first {
            return closed(phase: phase, location: location, cause: describe(first.error))
        }
        if error is IOError || error is NIOConnectionError {
            return closed(phase: phase, location: location, cause: describe(error))
        }
        if error is PostgresDecodingError {
            return PostgresFailure(.decoding, "postgres-nio could not decode a value")
        }
        return PostgresFailure(.protocolViolation, "unexpected error from the PostgreSQL client: \(type(of: error))")
    }

    private static func from(_ error: PSQLError, phase: Phase, location: PostgresLocation) -> PostgresFailure {
        switch error.code {
        case .server, .listenFailed:
            guard let info = error.serverInfo else {
                return PostgresFailure(.protocolViolation, "PostgreSQL reported an error without fields")
            }
            return fromServer(ServerReport(info), phase: phase, location: location)
        case .connectionError:
            let cause = error.underlying.map { cause in
                if case ChannelError.connectTimeout = cause { return "timed out" }
                if let connection = cause as? NIOConnectionError, let first = connection.connectionErrors.first {
                    return describe(first.error)
                }
                return describe(cause)
            } ?? "no cause given"
            return closed(phase: phase, location: location, cause: cause)
        case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
            return closed(phase: phase, location: location, cause: "the connection closed (\(error.code))")
        case .sslUnsupported:
            return PostgresFailure(
                .unreachable, "PostgreSQL at \(location) does not offer TLS, which sslmode=require asks for")
        case .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest:
            return PostgresFailure(.unreachable, "cannot set up TLS with PostgreSQL at \(location) (\(error.code))")
        case .authMechanismRequiresPassword:
            return PostgresFailure(
                .authentication,
                "PostgreSQL at \(location) asks for a password: set PGPASSWORD or give a password file")
        case .unsupportedAuthMechanism, .saslError:
            return PostgresFailure(
                .authentication, "PostgreSQL at \(location) asks for an authentication method this client cannot use (\(error.code))")
        case .queryCancelled:
            return PostgresFailure(.timeout, "the statement was cancelled")
        case .tooManyParameters:
            return PostgresFailure(.binding, "the statement has more parameters than PostgreSQL allows (65535)")
        default:
            return PostgresFailure(.protocolViolation, "PostgreSQL client error: \(error.code)")
        }
    }

    /// A socket error as the system names it ("Connection refused"), which
    /// NIO's own description wraps in its internals.
    private static func describe(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        return "\(error)"
    }

    private static func closed(phase: Phase, location: PostgresLocation, cause: String) -> PostgresFailure {
        switch phase {
        case .connecting: PostgresFailure(.unreachable, "cannot connect to PostgreSQL at \(location): \(cause)")
        case .statement: PostgresFailure(.connectionLost, "lost the connection to PostgreSQL at \(location): \(cause)")
        }
    }

    /// The server's ErrorResponse, by SQLSTATE class and code.
    private static func fromServer(_ report: ServerReport, phase: Phase, location: PostgresLocation) -> PostgresFailure {
        let state = report.sqlState ?? ""
        let code: Code
        var message = report.message ?? "PostgreSQL reported an error without a message"
        switch state {
        case "28P01", "28000":
            code = .authentication
            message = "PostgreSQL at \(location) refused the login: \(message). Check the user and the password (PGPASSWORD or the password file)"
        case "3D000":
            code = .missingDatabase
            message = "\(message) at \(location): create it (createdb) or fix the URL"
        case "57014":
            code = .timeout
        case "40001", "40P01":
            code = .retryable
        case "57P03", "53300":
            // The server is starting or shutting down, or has no connection slot left.
            code = phase == .connecting ? .unreachable : .connectionLost
            message = "PostgreSQL at \(location): \(message)"
        case "57P01", "57P02", "25P03":
            // Terminated by an administrator or a crash, or idle in a transaction too long: FATAL, the connection is gone.
            code = phase == .connecting ? .unreachable : .connectionLost
            message = "lost the connection to PostgreSQL at \(location): \(message)"
        case "08P01":
            // A malformed message, such as a bound value of the wrong size: the connection stays usable.
            code = .protocolViolation
        case _ where state.hasPrefix("08"):
            code = phase == .connecting ? .unreachable : .connectionLost
            message = "PostgreSQL connection failure at \(location): \(message)"
        default:
            code = .server
        }
        return PostgresFailure(
            code, message, sqlState: report.sqlState, detail: report.detail, hint: report.hint, constraint: report.constraint)
    }

    /// The ErrorResponse fields this layer keeps.
    private struct ServerReport {
        var sqlState: String?
        var message: String?
        var detail: String?
        var hint: String?
        var constraint: String?

        init(_ info: PSQLError.ServerInfo) {
            sqlState = info[.sqlState]
            message = info[.message]
            detail = info[.detail]
            hint = info[.hint]
            constraint = info[.constraintName]
        }
    }
}
