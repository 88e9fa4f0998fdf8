import IndexModel

extension BinaryReader {
    /// `decode` over the whole of `bytes`: bytes after what it read are
    /// refused, saying they follow `what`.
    static func whole<Value>(_ bytes: [UInt8], _ what: String,
                             _ decode: (inout BinaryReader) throws(CodecError) -> Value) throws(CodecError) -> Value {
        var reader = BinaryReader(bytes)
        let value = try decode(&reader)
        guard reader.isAtEnd else {
            throw CodecError(.trailingBytes, at: reader.offset, "\(reader.remaining) bytes follow \(what)")
        }
        return value
    }

    /// A string field of a message: at most `WireLimits.maximumStringBytes`.
    mutating func wireString() throws(CodecError) -> String {
        let at = offset
        let text = try string()
        guard text.utf8.count <= WireLimits.maximumStringBytes else {
            throw CodecError(.limitExceeded, at: at, "a string of \(text.utf8.count) bytes is longer than \(WireLimits.maximumStringBytes)")
        }
        return text
    }

    /// An `optional<string>` field of a message, checked as `wireString`.
    mutating func optionalWireString() throws(CodecError) -> String? {
        try optional { (reader: inout BinaryReader) throws(CodecError) in try reader.wireString() }
    }

    /// A `list<string>` of keywords: at most `WireLimits.maximumKeywords`,
    /// each checked as `wireString`.
    mutating func wireKeywords() throws(CodecError) -> [String] {
        let at = offset
        let count = try uvarint()
        guard count <= UInt64(WireLimits.maximumKeywords) else {
            throw CodecError(.limitExceeded, at: at, "\(count) keywords is more than \(WireLimits.maximumKeywords)")
        }
        var keywords: [String] = []
        for _ in 0..<count { keywords.append(try wireString()) }
        return keywords
    }
}
