/// A benchmark that cannot go on: its message says why.
struct BenchError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Input a benchmark was given that it cannot use (a corpus, a queries
/// file): the message names the file and the line. Exit status 2.
struct BenchInputError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
