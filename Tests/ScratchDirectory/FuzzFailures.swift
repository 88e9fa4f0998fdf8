import Foundation

/// The inputs a fuzz target's replay test feeds to the functions the target
/// calls, by name: its seeds (`tools/fuzz/corpus/TARGET/`, valid inputs on
/// which every contract of the target is exercised) and the failures its
/// campaigns saved (`tools/fuzz/failures/TARGET/`, which exists once a
/// campaign found one). A target without seeds is an error, not an empty
/// list, so a replay test never passes by reading nothing.
public func fuzzReplayInputs(_ target: String) throws -> [(String, [UInt8])] {
    var root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    while !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
        root = root.deletingLastPathComponent()
    }
    func inputs(_ folder: String, required: Bool) throws -> [(String, [UInt8])] {
        let directory = root.appendingPathComponent("tools/fuzz/\(folder)/\(target)")
        guard FileManager.default.fileExists(atPath: directory.path) else {
            if required { throw FuzzInputsMissing(path: "tools/fuzz/\(folder)/\(target)") }
            return []
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { !$0.hasPrefix(".") && !$0.hasPrefix("README") }.sorted()
        if required && names.isEmpty { throw FuzzInputsMissing(path: "tools/fuzz/\(folder)/\(target)") }
        return try names.map { name in
            ("\(folder)/\(name)", [UInt8](try Data(contentsOf: directory.appendingPathComponent(name))))
        }
    }
    return try inputs("corpus", required: true) + inputs("failures", required: false)
}

/// A fuzz target has no seeds to replay.
public struct FuzzInputsMissing: Error, CustomStringConvertible {
    public let path: String
    public var description: String {
        "\(path) holds no inputs (tools/fuzz/run --seeds TARGET writes a target's seeds)"
    }
}
