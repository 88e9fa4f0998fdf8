/// Appends the primitives of the Sightline binary formats to a byte buffer.
/// Every layout is specified in `Journal/FORMAT.md`.
public struct BinaryWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 128) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public mutating func byte(_ value: UInt8) {
        bytes.append(value)
    }

    /// Unsigned LEB128: seven bits a byte, least significant group first.
    public mutating func uvarint(_ value: UInt64) {
        var remaining = value
        while remaining >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: remaining) | 0x80)
            remaining >>= 7
        }
        bytes.append(UInt8(remaining))
    }

    /// Zigzag-mapped signed integer as an unsigned LEB128.
    public mutating func svarint(_ value: Int64) {
        uvarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    public mutating func bool(_ value: Bool) {
        bytes.append(value ? 1 : 0)
    }

    /// IEEE 754 binary64, little-endian.
    public mutating func double(_ value: Double) {
        fixed64(value.bitPattern)
    }

    public mutating func fixed64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func bigEndian64(_ value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func string(_ value: String) {
        var text = value
        text.withUTF8 { utf8 in
            uvarint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    public mutating func data(_ value: [UInt8]) {
        uvarint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    public mutating func raw(_ value: some Collection<UInt8>) {
        bytes.append(contentsOf: value)
    }

    public mutating func optional<T>(_ value: T?, _ write: (inout BinaryWriter, T) -> Void) {
        if let value {
            bytes.append(1)
            write(&self, value)
        } else {
            bytes.append(0)
        }
    }
}
