import CloudCore
import DeviceStore
import Foundation
import IndexModel
import Simulation
import Synchronization

/// A run's folder as the inspector reads it: `run.json` and `report.json`
/// once, at start (their sizes checked, their fields read with the types
/// they must have), and the stores on demand: the cloud store opened once,
/// read-only, when a page first needs it, and a device's store only for
/// that device's page or a trace that names it.
final class InspectedRun: Sendable {
    let folder: String
    let manifest: RunManifest
    /// `report.json`; `.null` when the folder has none (an older run).
    let report: JSONValue
    private let cloudStore = Mutex<(any CloudStore)?>(nil)

    /// The most bytes of `report.json` the inspector reads.
    static let reportLimit = 1 << 30

    init(folder: String) throws {
        self.folder = folder
        manifest = try RunFolder.manifest(folder)
        let path = (folder as NSString).appendingPathComponent("report.json")
        if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int {
            guard size <= InspectedRun.reportLimit, let data = FileManager.default.contents(atPath: path) else {
                throw InspectError("\(path) is \(size) bytes, over the \(InspectedRun.reportLimit)-byte limit, or cannot be read")
            }
            do {
                report = try JSONReader.parse([UInt8](data))
            } catch {
                throw InspectError("\(path) is not JSON: \(error)")
            }
        } else {
            report = .null
        }
    }

    /// The cloud store, opened read-only the first time it is asked for.
    func cloud() throws -> any CloudStore {
        try cloudStore.withLock { store in
            if let store { return store }
            let opened = try CloudStoreOption.open(RunFolder.cloudStore(manifest, folder: folder), postgres: PostgresSettings(),
                                                   options: CloudOptions(readOnly: true))
            store = opened
            return opened
        }
    }

    /// Device `number`'s store, read-only, for one request.
    func deviceStore(_ device: RunManifest.Device) throws -> DeviceStore {
        try StoreOption.open((folder as NSString).appendingPathComponent(device.store), options: StoreOptions(readOnly: true))
    }

    var passed: Bool { manifest.passed }

    /// Each device's figures from the report, by number, with the manifest's ids.
    var deviceFigures: [JSONObject] {
        guard case .array(let devices)? = report["devices"] else {
            return manifest.devices.map { ["number": .integer(Int64($0.number)), "id": .string($0.id)] }
        }
        return devices.compactMap { value in
            guard case .object(let object) = value else { return nil }
            return object
        }
    }

    /// The invariants from the report, failures first.
    var invariants: [(name: String, passed: Bool, detail: String, problems: [String])] {
        guard case .array(let list)? = report["invariants"] else { return [] }
        let all = list.compactMap { value -> (name: String, passed: Bool, detail: String, problems: [String])? in
            guard case .string(let name)? = value["name"], case .bool(let passed)? = value["passed"] else { return nil }
            let detail: String = if case .string(let text)? = value["detail"] { text } else { "" }
            var problems: [String] = []
            if case .array(let items)? = value["problems"] {
                problems = items.compactMap { if case .string(let text) = $0 { text } else { nil } }
            }
            return (name, passed, detail, problems)
        }
        return all.filter { !$0.passed } + all.filter(\.passed)
    }

    /// What the timeline script draws: the run's length, a row per kind of
    /// event with its count and times, and the cloud's outages.
    var timelineJSON: JSONValue {
        var times: [String: [JSONValue]] = [:]
        var order: [String] = []
        if case .array(let events)? = report["events"] {
            for event in events {
                guard case .string(let kind)? = event["kind"], let at = event["atSeconds"]?.number else { continue }
                if times[kind] == nil { order.append(kind) }
                times[kind, default: []].append(.double(at))
            }
        }
        let kinds = FaultKind.allCases.map(\.rawValue).filter { times[$0] != nil }
            + order.filter { FaultKind(rawValue: $0) == nil }
        var counts: [String: Int64] = [:]
        if case .object(let faults)? = report["faults"] {
            for member in faults.members { if case .integer(let count) = member.value { counts[member.key] = count } }
        }
        var outages: [JSONValue] = []
        if case .array(let samples)? = report["timeline"] {
            var start: Double?
            for sample in samples {
                guard let at = sample["atSeconds"]?.number, case .bool(let up)? = sample["cloudUp"] else { continue }
                if !up, start == nil { start = at }
                if up, let began = start { outages.append(.array([.double(began), .double(at)])); start = nil }
            }
            if let start, let last = samples.last?["atSeconds"]?.number { outages.append(.array([.double(start), .double(last)])) }
        }
        return .object([
            "duration": .double(report["virtualSeconds"]?.number ?? 0),
            "rows": .array(kinds.map { kind in
                .object(["kind": .string(kind), "count": .integer(counts[kind] ?? Int64(times[kind]?.count ?? 0)),
                         "color": .string(ReportStyle.color(kind)), "times": .array(times[kind] ?? [])])
            }),
            "outages": .array(outages),
        ])
    }
}

/// Something the inspector cannot show, in words.
struct InspectError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension JSONValue {
    /// The member `key` of an object; nil for anything else.
    subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// An integer or a double, as a double.
    var number: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .double(let value): value
        case .string(let text): Double(text)
        default: nil
        }
    }
}
