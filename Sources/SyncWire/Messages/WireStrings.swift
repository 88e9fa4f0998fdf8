import IndexModel

extension BinaryReader {
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
