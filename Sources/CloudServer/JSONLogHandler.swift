import Foundation
import IndexModel
import Logging
import Synchronization

/// swift-log's handler for `cloud serve --log-format json`: every log line
/// one JSON object on its own line, for log pipelines to read without
/// parsing prose.
///
/// Members, in this order: `time` (UTC, ISO 8601 with milliseconds from
/// `clock`), `level`, `label`, `message`, `request` (the request's id, as
/// the response's `x-request-id` header carries it) when the line belongs to
/// a request, `error` when the event carries one, then the line's metadata,
/// each value a string, an array or an object as swift-log holds it, or a
/// number or a bool where the metadata holds one (`.stringConvertible(42)`).
/// A metadata key that names one of those members is written as `metadata.KEY`.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public var logLevel: Logger.Level = .info
    private let label: String
    private let clock: any StoreClock
    private let sink: Sink

    /// Where lines go: one write per line, under a lock, so that lines from
    /// several threads never interleave.
    public final class Sink: Sendable {
        private let write: Mutex<(String) -> Void>

        public init(_ write: @escaping @Sendable (String) -> Void) {
            self.write = Mutex(write)
        }

        /// Standard error, where `cloud serve` logs.
        public static let standardError = Sink { line in
            FileHandle.standardError.write(Data(line.utf8))
        }

        func emit(_ line: String) {
            write.withLock { $0(line) }
        }
    }

    /// The members every line has, which metadata may not take.
    static let reserved: Set<String> = ["time", "level", "label", "message", "request", "error"]
    /// Where Hummingbird keeps a request's id in its logger's metadata.
    static let requestKey = "hb.request.id"

    public init(label: String, clock: any StoreClock = SystemClock(), sink: Sink = .standardError) {
        self.label = label
        self.clock = clock
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let given = event.metadata { merged.merge(given) { _, new in new } }
        var object: JSONObject = [
            "time": .string(ISO8601.format(clock.now())),
            "level": .string(event.level.rawValue),
            "label": .string(label),
            "message": .string(event.message.description),
        ]
        if let request = merged.removeValue(forKey: JSONLogHandler.requestKey) {
            object["request"] = JSONLogHandler.value(request)
        }
        if let error = event.error { object["error"] = .string("\(error)") }
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            object[JSONLogHandler.reserved.contains(key) ? "metadata.\(key)" : key] = JSONLogHandler.value(value)
        }
        sink.emit(JSONWriter.compact(.object(object)) + "\n")
    }

    /// A number or a bool given as one (`.stringConvertible(42)`), as a
    /// JSON number or bool; a double that JSON cannot hold (NaN, infinity)
    /// stays a string.
    static func number(_ value: any CustomStringConvertible & Sendable) -> JSONValue? {
        switch value {
        case let value as Bool: .bool(value)
        case let value as Int: .integer(Int64(value))
        case let value as Int64: .integer(value)
        case let value as Int32: .integer(Int64(value))
        case let value as UInt32: .integer(Int64(value))
        case let value as UInt64 where value <= UInt64(Int64.max): .integer(Int64(value))
        case let value as Double where value.isFinite: .double(value)
        default: nil
        }
    }

    static func value(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible): number(convertible) ?? .string(convertible.description)
        case .array(let values): .array(values.map(JSONLogHandler.value))
        case .dictionary(let values):
            .object(values.sorted { $0.key < $1.key }.reduce(into: JSONObject()) { $0[$1.key] = JSONLogHandler.value($1.value) })
        }
    }
}
