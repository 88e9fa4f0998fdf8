// What every fuzz target shares: libFuzzer's entry points, a reader that turns
// the fuzz input into choices, contract checks, and a scratch directory.
// Compiled into each target's binary by tools/fuzz/run; not part of the Swift package.
//
// Each file in tools/fuzz/Targets/ defines `enum Target` with
// - `run(_:)`, called once per input: it must never trap, and checks the
//   contracts that hold on every input with `contract(_:_:)`;
// - `seeds()`, a few small valid inputs made by the project's own code
//   (`tools/fuzz/run --seeds TARGET` writes them to tools/fuzz/corpus/TARGET/).
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    Target.run(bytes)
    return 0
}

/// With SIGHTLINE_FUZZ_WRITE_SEEDS=DIR the binary writes `Target.seeds()`
/// into DIR and exits instead of fuzzing.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>?,
                           _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    guard let directory = ProcessInfo.processInfo.environment["SIGHTLINE_FUZZ_WRITE_SEEDS"] else { return 0 }
    do {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let seeds = try Target.seeds()
        for (name, bytes) in seeds {
            try Data(bytes).write(to: URL(fileURLWithPath: directory).appendingPathComponent(name))
        }
        print("fuzz: wrote \(seeds.count) seeds to \(directory)")
        exit(0)
    } catch {
        print("fuzz: cannot write seeds: \(error)")
        exit(1)
    }
}

/// A broken contract: a fatalError, which libFuzzer records as a crash with
/// the input that caused it.
func contract(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("contract broken: \(message())") }
}

/// The fuzz input read as a sequence of choices. Past its end every read gives
/// zeros, so any input is a complete program of choices.
struct FuzzInput {
    let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }

    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint16() -> UInt16 { UInt16(byte()) | UInt16(byte()) << 8 }

    mutating func uint64() -> UInt64 {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 64, by: 8) { value |= UInt64(byte()) << UInt64(shift) }
        return value
    }

    mutating func below(_ count: Int) -> Int { Int(byte()) % count }

    mutating func pick<T>(_ options: [T]) -> T { options[below(options.count)] }

    /// Up to `count` bytes (fewer at the end of the input).
    mutating func bytes(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + count)
        defer { offset = max(offset, end) }
        return offset < end ? Array(bytes[offset..<end]) : []
    }

    /// The rest of the input.
    mutating func rest() -> [UInt8] { bytes(max(0, bytes.count - offset)) }
}

/// A directory for this process's files, on tmpfs when there is one (the
/// store targets write a file per input and SQLite syncs them).
let scratchDirectory: String = makeScratchDirectory()

private func makeScratchDirectory() -> String {
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm"
        : (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp")
    let path = "\(base)/sightline-fuzz-\(ProcessInfo.processInfo.processIdentifier)"
    try? FileManager.default.removeItem(atPath: path)
    do {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    } catch {
        fatalError("fuzz: cannot create the scratch directory \(path): \(error)")
    }
    atexit { removeScratchDirectory() }
    return path
}

private func removeScratchDirectory() {
    try? FileManager.default.removeItem(atPath: scratchDirectory)
}

/// Removes `path` and the files SQLite keeps beside it.
func removeStoreFiles(_ path: String) {
    for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}

/// A line on standard error, unbuffered, so it is there when a contract breaks.
func note(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
