/// The object identifiers of the PostgreSQL types this layer sends and reads
/// (`pg_type.oid`, fixed for built-in types in every PostgreSQL version).
enum TypeOID {
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let name: UInt32 = 19
    static let int8: UInt32 = 20
    static let int2: UInt32 = 21
    static let int4: UInt32 = 23
    static let text: UInt32 = 25
    static let oid: UInt32 = 26
    static let json: UInt32 = 114
    static let float4: UInt32 = 700
    static let float8: UInt32 = 701
    static let unknown: UInt32 = 705
    static let bpchar: UInt32 = 1042
    static let varchar: UInt32 = 1043
    static let jsonb: UInt32 = 3802

    static let boolArray: UInt32 = 1000
    static let byteaArray: UInt32 = 1001
    static let nameArray: UInt32 = 1003
    static let int2Array: UInt32 = 1005
    static let int4Array: UInt32 = 1007
    static let textArray: UInt32 = 1009
    static let bpcharArray: UInt32 = 1014
    static let varcharArray: UInt32 = 1015
    static let int8Array: UInt32 = 1016
    static let oidArray: UInt32 = 1028

    /// The element type of an array type this layer handles, or nil. Arrays of
    /// floating-point numbers are not among them: Sightline stores none.
    static func element(ofArray type: UInt32) -> UInt32? {
        switch type {
        case boolArray: bool
        case byteaArray: bytea
        case nameArray: name
        case int2Array: int2
        case int4Array: int4
        case textArray: text
        case bpcharArray: bpchar
        case varcharArray: varchar
        case int8Array: int8
        case oidArray: oid
        default: nil
        }
    }

    /// The type's name, for messages, or its number when it is not one of these.
    static func typeName(_ type: UInt32) -> String {
        switch type {
        case bool: "bool"
        case bytea: "bytea"
        case name: "name"
        case int8: "int8"
        case int2: "int2"
        case int4: "int4"
        case text: "text"
        case oid: "oid"
        case json: "json"
        case float4: "float4"
        case float8: "float8"
        case unknown: "unknown"
        case bpchar: "bpchar"
        case varchar: "varchar"
        case jsonb: "jsonb"
        default:
            if let element = element(ofArray: type) { "\(typeName(element))[]" } else { "type \(type)" }
        }
    }

    static func isText(_ type: UInt32) -> Bool {
        type == text || type == varchar || type == bpchar || type == name || type == unknown || type == json
    }
}
