/// A benchmark that cannot go on: its message says why.
struct BenchError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
