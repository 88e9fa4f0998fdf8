import ArgumentParser
import DeviceStore
import IndexModel

struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Compare two device journals event by event.",
        discussion: """
            Events are compared seq by seq by content (kind and payload); --strict also \
            compares epoch, call and time. Exit status 0 when the journals hold the same \
            events, 1 when they differ.
            """
    )

    @OptionGroup var store: StoreOption
    @OptionGroup var output: JSONOption

    @Option(name: .long, help: ArgumentHelp("The other store.", valueName: "path"))
    var other: String

    @Flag(name: .long, help: "Also compare epoch, call and time.")
    var strict = false

    @Option(name: [.customShort("n"), .long], help: "The most differences to print.")
    var limit: Int = 20

    func run() throws {
        try CloudJournal.refuse("diff", store.db)
        let left = try store.openReadOnly()
        let right = try StoreOption.open(other, options: StoreOptions(readOnly: true))
        var differing: [(Seq, JournalRecord, JournalRecord)] = []
        var differingCount = 0
        var common = 0
        var firstDifference: Seq?
        var onlyLeft: [JournalRecord] = []
        var onlyRight: [JournalRecord] = []
        var onlyLeftCount = 0
        var onlyRightCount = 0
        var next = Seq(1)
        let chunk: UInt64 = 1000
        do {
            while true {
                let range = next...Seq(next.rawValue + chunk - 1)
                let leftRecords = try left.records(range)
                let rightRecords = try right.records(range)
                if leftRecords.isEmpty && rightRecords.isEmpty { break }
                for position in 0..<max(leftRecords.count, rightRecords.count) {
                    switch (position < leftRecords.count ? leftRecords[position] : nil,
                            position < rightRecords.count ? rightRecords[position] : nil) {
                    case let (a?, b?):
                        if same(a, b) {
                            common += 1
                        } else {
                            differingCount += 1
                            if firstDifference == nil { firstDifference = a.seq }
                            if differing.count < limit { differing.append((a.seq, a, b)) }
                        }
                    case let (a?, nil):
                        onlyLeftCount += 1
                        if onlyLeft.count < limit { onlyLeft.append(a) }
                    case let (nil, b?):
                        onlyRightCount += 1
                        if onlyRight.count < limit { onlyRight.append(b) }
                    case (nil, nil):
                        break
                    }
                }
                next = Seq(range.upperBound.rawValue + 1)
            }
        } catch {
            throw error.exit()
        }
        let identical = differingCount == 0 && onlyLeftCount == 0 && onlyRightCount == 0
        if output.json {
            var object: JSONObject = [
                "identical": .bool(identical),
                "sameEvents": .integer(Int64(common)),
                "differingEvents": .integer(Int64(differingCount)),
                "onlyInDb": .integer(Int64(onlyLeftCount)),
                "onlyInOther": .integer(Int64(onlyRightCount)),
            ]
            if let firstDifference { object["firstDifferentSeq"] = .integer(Int64(firstDifference.rawValue)) }
            object["differences"] = .array(differing.map { seq, a, b in
                .object(["seq": .integer(Int64(seq.rawValue)), "db": RecordFormat.json(a), "other": RecordFormat.json(b)])
            })
            object["onlyInDbEvents"] = .array(onlyLeft.map { RecordFormat.json($0) })
            object["onlyInOtherEvents"] = .array(onlyRight.map { RecordFormat.json($0) })
            Output.json(.object(object))
        } else if identical {
            Output.line("identical: \(common) events")
        } else {
            Output.line("\(common) events the same, \(differingCount) differ, \(onlyLeftCount) only in --db, \(onlyRightCount) only in --other")
            for (seq, a, b) in differing {
                Output.line("seq \(seq) differs:")
                Output.line("  - " + RecordFormat.line(a))
                Output.line("  + " + RecordFormat.line(b))
            }
            for record in onlyLeft { Output.line("only in --db:    " + RecordFormat.line(record)) }
            for record in onlyRight { Output.line("only in --other: " + RecordFormat.line(record)) }
            let shown = differing.count + onlyLeft.count + onlyRight.count
            let total = differingCount + onlyLeftCount + onlyRightCount
            if shown < total { Output.line("… \(total - shown) more (raise --limit)") }
        }
        if !identical { throw ExitStatus.checkFailed }
    }

    private func same(_ a: JournalRecord, _ b: JournalRecord) -> Bool {
        guard a.kind == b.kind, a.payload == b.payload else { return false }
        return !strict || (a.epoch == b.epoch && a.call == b.call && a.time == b.time)
    }
}
