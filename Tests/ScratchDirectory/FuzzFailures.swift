import Foundation

/// The inputs a fuzz campaign saved in `tools/fuzz/failures/TARGET/`, by
/// name: the test suites feed each to the functions the target calls.
public func savedFuzzFailures(_ target: String) throws -> [(String, [UInt8])] {
    var root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    while !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
        root = root.deletingLastPathComponent()
    }
    let directory = root.appendingPathComponent("tools/fuzz/failures/\(target)")
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    return try names.filter { !$0.hasPrefix(".") && !$0.hasPrefix("README") }.sorted().map { name in
        (name, [UInt8](try Data(contentsOf: directory.appendingPathComponent(name))))
    }
}
