import IndexModel
import SyncWire

extension TraceStep {
    /// Where the step happened, as the text output's second column.
    public var placeText: String {
        switch place {
        case .device(let label, _): return label
        case .cloud:
            switch position {
            case .log(_, _, let device, let sender, _, _, _, _): return "cloud ← " + (sender ?? TextRule.printable(device.rawValue))
            case .cloudState(_, let device, let sender): return "cloud, of " + (sender ?? TextRule.printable(device.rawValue))
            default: return "cloud"
            }
        }
    }

    /// The step's position, as the text output's third column.
    public var positionText: String {
        switch position {
        case .journal(let seq, _, _): "journal \(seq)"
        case .outbox(let epoch, let seq, _): "outbox \(epoch):\(seq)"
        case .log(_, let row, _, _, let epoch, let first, let last, let seq):
            "log \(row): " + (seq.map { "\(epoch):\($0)" } ?? "\(epoch):\(first)…\(last)")
        case .cloudState: "now"
        }
    }

    /// What happened and what the cloud did with it, in one line.
    public var fullText: String {
        ([text] + decisions.map(\.text)).joined(separator: "; ")
    }

    public var jsonValue: JSONValue {
        var object: JSONObject = [
            "time": .string(time.description),
            "event": .string(event),
            "text": .string(text),
        ]
        switch place {
        case .device(let label, let id):
            object["at"] = .string("device")
            object["device"] = .string(id.rawValue)
            object["label"] = .string(label)
        case .cloud:
            object["at"] = .string("cloud")
        }
        switch position {
        case .journal(let seq, let epoch, let call):
            object["journal"] = .object(["seq": .integer(Int64(clamping: seq)), "epoch": .integer(Int64(clamping: epoch)),
                                         "call": .integer(Int64(clamping: call))])
        case .outbox(let epoch, let seq, let journalSeq):
            object["outbox"] = .object(["epoch": .integer(Int64(clamping: epoch)), "seq": .integer(Int64(clamping: seq)),
                                        "journalSeq": .integer(Int64(clamping: journalSeq))])
        case .log(let app, let row, let device, let sender, let epoch, let first, let last, let seq):
            var log: JSONObject = [
                "app": .string(app.rawValue), "row": .integer(row), "device": .string(device.rawValue),
                "epoch": .integer(Int64(clamping: epoch)), "firstSeq": .integer(Int64(clamping: first)),
                "lastSeq": .integer(Int64(clamping: last)),
            ]
            if let seq { log["seq"] = .integer(Int64(clamping: seq)) }
            if let sender { log["label"] = .string(sender) }
            object["log"] = .object(log)
        case .cloudState(let app, let device, let sender):
            var state: JSONObject = ["app": .string(app.rawValue), "device": .string(device.rawValue)]
            if let sender { state["label"] = .string(sender) }
            object["cloudState"] = .object(state)
        }
        if let hash { object["hash"] = .string(hash.hex) }
        if !decisions.isEmpty {
            object["decisions"] = .array(decisions.map { .object(["kind": .string($0.kind.rawValue), "text": .string($0.text)]) })
        }
        return .object(object)
    }
}

extension PublicVerdict {
    public var jsonValue: JSONValue {
        .object([
            "app": .string(app.rawValue),
            "hash": .string(hash.hex),
            "public": .bool(isPublic),
            "liveVotes": .integer(liveVotes),
            "threshold": .integer(Int64(threshold)),
            "agreement": .integer(Int64(agreement)),
            "withdrawn": .integer(Int64(withdrawn)),
            "offers": .integer(Int64(offers)),
            "versions": .integer(Int64(versions)),
            "largestAgreeing": .integer(Int64(largestAgreeing)),
            "devicesHolding": .integer(Int64(devicesHolding)),
            "devicesCounted": .integer(Int64(devicesCounted)),
            "devicesWaiting": .integer(Int64(devicesWaiting)),
            "reasons": .array(reasons.map { .string($0) }),
        ])
    }
}

extension Trace {
    /// The trace as one JSON document (`sightline trace --json`).
    public var jsonValue: JSONValue {
        .object([
            "target": .string(target.description),
            "devicesRead": .integer(Int64(devicesRead)),
            "cloudRead": .bool(cloudRead),
            "steps": .array(steps.map(\.jsonValue)),
            "verdicts": .array(verdicts.map(\.jsonValue)),
            "problems": .array(problems.map { .string($0) }),
        ])
    }

    /// The timeline as table rows: time, where, position, what.
    public var rows: [[String]] {
        steps.map { [$0.time.description, $0.placeText, $0.positionText, $0.fullText] }
    }
}
