import Foundation
import IndexModel

/// Reads a file (or stdin) line by line as bytes, without loading it whole.
/// A line longer than `maximumBytes` is reported instead of buffered.
struct LineReader {
    enum Line {
        case text([UInt8])
        case tooLong
    }

    private let handle: FileHandle
    private let maximumBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    private(set) var lineNumber = 0

    init(path: String, maximumBytes: Int = Limits.lineBytes) throws {
        if path == "-" {
            handle = FileHandle.standardInput
        } else {
            guard let opened = FileHandle(forReadingAtPath: path) else {
                throw LineReaderError(message: "cannot open \(path): no such file or not readable")
            }
            handle = opened
        }
        self.maximumBytes = maximumBytes
    }

    /// The next line without its terminator (`\n` or `\r\n`), nil at the end.
    mutating func next() throws -> Line? {
        var skipping = false
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0A) {
                var end = newline
                if end > start, buffer[end - 1] == 0x0D { end -= 1 }
                let line = Array(buffer[start..<end])
                start = newline + 1
                lineNumber += 1
                // A line that arrived within one read is as long as one that did not.
                if skipping || line.count > maximumBytes { return .tooLong }
                return .text(line)
            }
            if buffer.count - start > maximumBytes {
                // Drop what we have of the oversized line and skip to its end.
                skipping = true
                buffer.removeAll(keepingCapacity: true)
                start = 0
            }
            if atEnd {
                guard start < buffer.count || skipping else { return nil }
                let line = Array(buffer[start...])
                buffer.removeAll()
                start = 0
                lineNumber += 1
                return skipping || line.count > maximumBytes ? .tooLong : .text(line)
            }
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            let chunk = try handle.read(upToCount: 1 << 16) ?? Data()
            if chunk.isEmpty { atEnd = true } else { buffer.append(contentsOf: chunk) }
        }
    }
}

struct LineReaderError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
