import ArgumentParser
struct AppendBench: ParsableCommand { static let configuration = CommandConfiguration(commandName: "append"); func run() {} }
