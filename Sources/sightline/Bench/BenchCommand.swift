import ArgumentParser

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmarks that measure a raw SQLite or zlib baseline in the same run and report the ratio.",
        subcommands: [AppendBench.self]
    )
}
