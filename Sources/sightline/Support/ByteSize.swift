import ArgumentParser

/// An amount of memory on the command line: a number with an optional unit,
/// like `512M`, `1.5G` or `2GiB`. K, M and G (with or without `B` or `iB`)
/// are powers of 1,024; a bare number is bytes.
struct ByteSize: ExpressibleByArgument, Equatable {
    let bytes: Int

    static let units: [(suffixes: [String], factor: Double)] = [
        (["GIB", "GB", "G"], Double(1 << 30)), (["MIB", "MB", "M"], Double(1 << 20)), (["KIB", "KB", "K"], 1_024), (["B", ""], 1),
    ]
    /// What a size may be: at least a mebibyte, at most a pebibyte.
    static let range = (1 << 20)...(1 << 50)

    init(bytes: Int) { self.bytes = bytes }

    init?(argument: String) {
        let text = argument.uppercased()
        guard text.utf8.count <= 32 else { return nil }
        for unit in ByteSize.units {
            for suffix in unit.suffixes where text.hasSuffix(suffix) {
                let number = text.dropLast(suffix.count)
                guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                      let value = Double(number), value.isFinite else { continue }
                let bytes = (value * unit.factor).rounded()
                guard bytes >= Double(ByteSize.range.lowerBound), bytes <= Double(ByteSize.range.upperBound) else { return nil }
                self.bytes = Int(bytes)
                return
            }
        }
        return nil
    }

    static var defaultValueDescription: String { "half this machine's memory" }
}
