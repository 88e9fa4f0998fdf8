/// A value bound to a statement's parameter or read from a result column, in
/// the few types Sightline stores.
///
/// Bound, each is sent in PostgreSQL's binary format: `int64` as `int8`
/// (or `int4`/`int2` when the statement's parameter has that type and the
/// value fits), `text` as `text` (or `varchar`, `json`, `jsonb`), arrays as
/// one-dimensional arrays starting at 1, whose elements may be NULL in the
/// `optional…Array` cases. Read, integers of every width come back as
/// `int64`, `float4`/`float8` as `double`, the text types as `text`, and an
/// array as its `optional…` case only when it holds a NULL.
public enum PostgresValue: Hashable, Sendable {
    case null
    case int64(Int64)
    case bool(Bool)
    case double(Double)
    case text(String)
    case bytea([UInt8])
    case int64Array([Int64])
    case optionalInt64Array([Int64?])
    case boolArray([Bool])
    case optionalBoolArray([Bool?])
    case textArray([String])
    case optionalTextArray([String?])
    case byteaArray([[UInt8]])
    case optionalByteaArray([[UInt8]?])

    /// The value's type as PostgreSQL names it, for messages.
    public var typeName: String {
        switch self {
        case .null: "NULL"
        case .int64: "int8"
        case .bool: "bool"
        case .double: "float8"
        case .text: "text"
        case .bytea: "bytea"
        case .int64Array, .optionalInt64Array: "int8[]"
        case .boolArray, .optionalBoolArray: "bool[]"
        case .textArray, .optionalTextArray: "text[]"
        case .byteaArray, .optionalByteaArray: "bytea[]"
        }
    }
}

extension PostgresValue {
    /// `.null` for nil, `.int64` otherwise: for nullable columns.
    public init(_ value: Int64?) { self = value.map { .int64($0) } ?? .null }
    /// `.null` for nil, `.text` otherwise.
    public init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    /// `.null` for nil, `.bytea` otherwise.
    public init(_ value: [UInt8]?) { self = value.map { .bytea($0) } ?? .null }
    /// `.null` for nil, `.bool` otherwise.
    public init(_ value: Bool?) { self = value.map { .bool($0) } ?? .null }
}
