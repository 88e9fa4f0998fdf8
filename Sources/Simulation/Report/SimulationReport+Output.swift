import Foundation
import IndexModel

extension SimulationReport {
    /// The run as one JSON document (`--json`, `report.json`).
    public var jsonValue: JSONValue {
        func integer(_ value: Int) -> JSONValue { .integer(Int64(value)) }
        func seconds(_ milliseconds: Int64) -> JSONValue { .double(Double(milliseconds) / 1_000) }
        var faultObject = JSONObject()
        for kind in FaultKind.allCases { faultObject[kind.rawValue] = integer(faults[kind] ?? 0) }
        var coverageObject = JSONObject()
        for path in RecoveryPath.allCases { coverageObject[path.rawValue] = integer(coverage[path] ?? 0) }
        var planObject = JSONObject()
        for (name, value) in plan.summary { planObject[name] = .string(value) }
        func milliseconds(_ seconds: Double) -> JSONValue { .double((seconds * 1_000).rounded() / 1_000) }
        var timesObject = JSONObject()
        for part in RunTimes.Part.allCases { timesObject[part.name + "Seconds"] = milliseconds(times[part]) }
        timesObject["laneSeconds"] = milliseconds(times.lane)
        var result: JSONObject = [
            "passed": .bool(passed),
            "seed": .string(String(options.seed)),
            "replay": .string(replayCommand),
            "replayable": .bool(options.replayNote == nil),
            "cloud": .string(options.remote?.location ?? "embedded"),
            "options": .object([
                "devices": integer(options.devices),
                "eventsPerDevice": integer(options.eventsPerDevice),
                "faults": .string(options.faults.rawValue),
                "threshold": integer(options.threshold),
                "catalogueSize": integer(options.catalogueSize),
                "app": .string(options.app.rawValue),
            ]),
            "faultPlan": .object(planObject),
            "invariants": .array(invariants.map(\.jsonValue)),
            "totals": .object([
                "appCalls": integer(appCalls),
                "journalEvents": .integer(Int64(journalEvents)),
                "framesSent": integer(framesSent),
                "probes": integer(probes),
                "retries": integer(retries),
                "rewinds": integer(rewinds),
                "dictionaryResets": integer(dictionaryResets),
                "messagesAcknowledged": integer(messagesAcknowledged),
                "contentRequests": integer(contentRequests),
                "sessionsGivenUp": integer(sessionsGivenUp),
                "cloudAccepted": integer(cloudAccepted),
                "cloudDuplicates": integer(cloudDuplicates),
                "cloudRejected": integer(cloudRejected),
                "bytesUp": integer(bytesUp),
                "bytesDown": integer(bytesDown),
                "cloudLogRows": integer(cloudLogRows),
                "publicItems": integer(publicItems),
            ]),
            "faults": .object(faultObject),
            "coverage": .object(coverageObject),
            "restores": .array(restores.map { restore in
                .object([
                    "device": integer(restore.device),
                    "atSeconds": seconds(restore.at),
                    "backupAgeSeconds": seconds(restore.backupAge),
                    "journalEventsLost": .integer(Int64(restore.journalEventsLost)),
                    "callsLost": integer(restore.callsLost),
                ])
            }),
            "converged": .bool(converged),
            "virtualSeconds": seconds(virtualMilliseconds),
            "convergenceSeconds": seconds(convergenceMilliseconds),
            "wallSeconds": .double((wallSeconds * 1_000).rounded() / 1_000),
            "eventsPerSecond": .double(eventsPerSecond.rounded()),
            "times": .object(timesObject),
            "hibernation": .object([
                "budgetBytes": integer(hibernation.budget),
                "mostAwake": integer(hibernation.mostAwake),
                "sleeps": integer(hibernation.sleeps),
                "unchangedSleeps": integer(hibernation.keptImages),
                "wakes": integer(hibernation.wakes),
                "births": integer(hibernation.births),
                "sleepSeconds": .double((hibernation.sleepSeconds * 1_000).rounded() / 1_000),
                "wakeSeconds": .double((hibernation.wakeSeconds * 1_000).rounded() / 1_000),
                "mostSleepingBytes": integer(hibernation.mostSleepingBytes),
                "mostSleepingImageBytes": integer(hibernation.mostImageBytes),
                "imageFileBytes": integer(hibernation.imageFileBytes),
                "awakeAtEnd": integer(hibernation.awakeAtEnd),
                "awakeStatementBytes": integer(hibernation.awakeMemory.statements),
                "awakePageBytes": integer(hibernation.awakeMemory.pages),
                "awakeSchemaBytes": integer(hibernation.awakeMemory.schema),
                "pooledConnections": integer(hibernation.pooledConnections),
                "pooledStatementBytes": integer(hibernation.pooledMemory.statements),
                "pooledSchemaBytes": integer(hibernation.pooledMemory.schema),
            ]),
            "digest": .string(digest),
            "popularity": popularity.map { accuracy in
                .object([
                    "mode": .string("ldp"),
                    "epsilon": .string(PrivatePopularity.decimal(accuracy.settings.epsilonThousandths)),
                    "dailyBudget": .string(PrivatePopularity.decimal(accuracy.settings.dailyBudgetThousandths)),
                    "reports": integer(accuracy.reports),
                    "items": integer(accuracy.items),
                    "meanAbsoluteError": .double(accuracy.meanAbsoluteError),
                    "topMaxError": .double(accuracy.topMaxError),
                ])
            } ?? .object(["mode": .string("exact")]),
            "findings": .array(findings.map { .string($0) }),
            "events": .array(events.map { event in
                var object: JSONObject = ["atSeconds": seconds(event.at), "kind": .string(event.kind)]
                if let device = event.device { object["device"] = integer(device) }
                return .object(object)
            }),
            "eventsLeftOut": integer(eventsLeftOut),
            "devices": .array(devices.map { device in
                .object(["number": integer(device.number), "id": .string(device.id), "calls": integer(device.calls),
                         "epoch": .integer(Int64(clamping: device.epoch)), "restores": integer(device.restores),
                         "backups": integer(device.backups), "largestBacklog": integer(device.largestBacklog)])
            }),
            "timeline": .array(timeline.map { sample in
                .object([
                    "atSeconds": seconds(sample.at),
                    "backlog": integer(sample.backlog),
                    "publicItems": integer(sample.publicItems),
                    "cloudUp": .bool(sample.cloudUp),
                ])
            }),
        ]
        if let note = options.replayNote { result["replayNote"] = .string(note) }
        if let sabotage = options.sabotage {
            result["sabotage"] = .object(["rule": .string(sabotage.rawValue), "what": .string(sabotage.summary),
                                          "breaks": .string(sabotage.breaks)])
        }
        return .object(result)
    }

    /// The command that runs this simulation again.
    public var replayCommand: String { options.replayCommand }

    /// The summary table: label and value rows.
    public var summaryRows: [[String]] {
        var rows: [[String]] = [
            ["seed", "\(options.seed)  (" + (options.replayNote.map { "\($0): " } ?? "") + "\(replayCommand))"],
            ["devices", "\(options.devices) × \(options.eventsPerDevice) calls, K = \(options.threshold), faults \(options.faults.rawValue)"],
        ]
        if let sabotage = options.sabotage {
            rows.append(["sabotage", "\(sabotage.rawValue), on purpose: \(sabotage.summary), so \(sabotage.breaks) fails"])
        }
        rows += [
            ["app calls", "\(appCalls) (\(journalEvents) journal events)"],
            ["frames", "\(framesSent) sent, \(probes) probes, \(retries) retries, \(rewinds) rewinds, \(dictionaryResets) sent again without a dictionary, \(sessionsGivenUp) sessions given up"],
            ["cloud", "\(cloudAccepted) accepted, \(cloudDuplicates) duplicates, \(cloudRejected) rejected; \(cloudLogRows) log rows, \(publicItems) public items"],
            ["messages", "\(messagesAcknowledged) acknowledged, \(contentRequests) content requests"],
            ["traffic", "\(bytesUp) bytes up, \(bytesDown) bytes down"],
        ]
        let fired = FaultKind.allCases.filter { (faults[$0] ?? 0) > 0 }
        rows.append(["faults", fired.isEmpty ? "none" : fired.map { "\($0.rawValue) \(faults[$0]!)" }.joined(separator: ", ")])
        let paths = RecoveryPath.allCases.filter { (coverage[$0] ?? 0) > 0 }
        rows.append(["recovery", paths.isEmpty ? "none needed" : paths.map { "\($0.rawValue) \(coverage[$0]!)" }.joined(separator: ", ")])
        if !restores.isEmpty {
            let lost = restores.reduce(UInt64(0)) { $0 + $1.journalEventsLost }
            rows.append(["restores", "\(restores.count) device restore(s), \(lost) journal events lost with the wiped stores"])
        }
        rows.append(["convergence", converged
            ? String(format: "%.1f virtual s after the faults (run: %.1f virtual s)", Double(convergenceMilliseconds) / 1_000, Double(virtualMilliseconds) / 1_000)
            : "did not converge"])
        rows.append(["wall time", String(format: "%.2f s, %.0f calls/s", wallSeconds, eventsPerSecond)])
        rows.append(["time", times.summary])
        rows.append(["stores", hibernation.summary])
        if let popularity {
            rows.append(["popularity", "ldp, ε \(PrivatePopularity.decimal(popularity.settings.epsilonThousandths)) a report: "
                         + "\(popularity.reports) reports counted; estimates of \(popularity.items) entries off by "
                         + String(format: "%.2f on average, at most %.2f among the most reported", popularity.meanAbsoluteError,
                                  popularity.topMaxError)])
        }
        rows.append(["digest", digest])
        for invariant in invariants {
            rows.append([invariant.passed ? "pass" : "FAIL", "\(invariant.name): \(invariant.detail)"])
        }
        return rows
    }
}
