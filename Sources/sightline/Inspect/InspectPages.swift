import CloudCore
import DeviceStore
import Foundation
import IndexModel
import Inspect
import Simulation
import SyncWire

/// The inspector's pages, as HTML the server writes: every value from the
/// run's files or stores is escaped, and data a script reads is embedded as
/// JSON with `<` escaped, so nothing in a store can become markup.
enum InspectPages {
    enum Section: String {
        case run, fleet, cloud, device, trace
    }

    static func layout(_ title: String, section: Section, query: String = "", _ body: String) -> String {
        func link(_ path: String, _ name: String, _ here: Section) -> String {
            "<a href=\"\(path)\"\(section == here ? " class=\"here\"" : "")>\(name)</a>"
        }
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title)) · Sightline inspector</title>
            <link rel="icon" href="data:,"><link rel="stylesheet" href="/assets/inspector.css"></head><body>
            <header><span class="brand">Sightline inspector</span>
            <nav>\(link("/", "Run", .run))\(link("/fleet", "Fleet", .fleet))\(link("/cloud", "Cloud", .cloud))</nav>
            <form class="search" action="/trace" method="get" role="search">
            <input name="q" value="\(escape(query))" placeholder="item id, URL, public hash or device:N" aria-label="Trace an entry or a device">
            <button type="submit">Trace</button></form></header>
            <main>
            \(body)
            </main>
            <script src="/assets/inspector.js"></script>
            </body></html>

            """
    }

    // MARK: - The run

    static func run(_ run: InspectedRun) -> String {
        let manifest = run.manifest
        var body = "<h1>Run, seed \(manifest.seed): <span class=\"\(run.passed ? "pass" : "fail")\">\(run.passed ? "passed" : "FAILED")</span></h1>\n"
        let invariants = run.invariants
        let failed = invariants.filter { !$0.passed }
        body += "<section class=\"verdict \(failed.isEmpty && run.passed ? "ok" : "bad")\">\n"
        if failed.isEmpty {
            body += "<p><strong>All \(invariants.count) invariants held.</strong></p>\n"
        } else {
            body += "<p><strong>\(failed.count) of \(invariants.count) invariants failed.</strong></p><ul>\n"
            for invariant in failed {
                body += "<li><code>\(escape(invariant.name))</code>: \(escape(invariant.detail))"
                if invariant.problems.count > 1 {
                    body += "<ul>" + invariant.problems.prefix(20).map { "<li>\(escape($0))</li>" }.joined() + "</ul>"
                    if invariant.problems.count > 20 { body += "<p class=\"muted\">and \(invariant.problems.count - 20) more in report.json</p>" }
                }
                body += "</li>\n"
            }
            body += "</ul>\n"
        }
        if case .array(let findings)? = run.report["findings"], !findings.isEmpty {
            body += "<p>Findings:</p><ul>" + findings.compactMap { if case .string(let text) = $0 { "<li>\(escape(text))</li>" } else { nil } }
                .joined() + "</ul>\n"
        }
        body += "<p>Replay: <code>\(escape(manifest.replay))</code><br>Digest <code>\(escape(manifest.digest))</code></p>\n</section>\n"

        body += """
            <h2>Timeline</h2>
            <div id="timeline" data-timeline>
            <div class="controls"><button class="zoom-in" type="button">Zoom in</button><button class="zoom-out" type="button">Zoom out</button>
            <button class="zoom-reset" type="button">Whole run</button><span class="note window"></span>
            <span class="note">Wheel to zoom, drag to move. Shaded: the cloud was down.</span></div>
            <div class="chart"></div>
            <script type="application/json">\(embedded(run.timelineJSON))</script>
            </div>

            """
        body += "<div class=\"grid\">\n<section><h2>Options</h2><table>\n"
        body += row("command", "<code>\(escape(manifest.command))</code>")
        if case .object(let options)? = run.report["options"] {
            for member in options.members { body += row(member.key, escape(plain(member.value))) }
        }
        body += "</table></section>\n<section><h2>Totals</h2><table>\n"
        if case .object(let totals)? = run.report["totals"] {
            for member in totals.members { body += row(member.key, escape(plain(member.value)), numeric: true) }
        }
        for key in ["virtualSeconds", "convergenceSeconds", "wallSeconds"] {
            if let value = run.report[key] { body += row(key, escape(plain(value)), numeric: true) }
        }
        body += "</table></section>\n</div>\n"
        body += "<h2>Cloud incarnations, backups and restores</h2>\n"
        var incarnations = 1
        var lines: [String] = []
        if case .array(let events)? = run.report["events"] {
            for event in events {
                guard case .string(let kind)? = event["kind"], let at = event["atSeconds"]?.number else { continue }
                switch kind {
                case "cloudCrash", "cloudRestore":
                    incarnations += 1
                    lines.append("<tr><td class=\"num\">\(format(at))</td><td>\(kind == "cloudCrash" ? "the cloud crashed" : "the cloud was restored from a backup")</td></tr>")
                case RunEvent.cloudSnapshot:
                    lines.append("<tr><td class=\"num\">\(format(at))</td><td>cloud snapshot written</td></tr>")
                default:
                    break
                }
            }
        }
        body += "<p>\(incarnations) cloud incarnation(s); \(manifest.cloudBackups.count) cloud backup file(s) kept; "
            + "\(manifest.devices.reduce(0) { $0 + $1.backups.count }) device backup file(s) kept.</p>\n"
        if !lines.isEmpty {
            body += "<details\(lines.count <= 12 ? " open" : "")><summary>\(lines.count) cloud events</summary><table>"
                + "<tr><th class=\"num\">virtual s</th><th>what</th></tr>\n" + lines.joined(separator: "\n") + "</table></details>\n"
        }
        if case .array(let restores)? = run.report["restores"], !restores.isEmpty {
            body += "<details\(restores.count <= 12 ? " open" : "")><summary>\(restores.count) device restores</summary><table>"
                + "<tr><th class=\"num\">device</th><th class=\"num\">virtual s</th><th class=\"num\">backup age (s)</th>"
                + "<th class=\"num\">journal events lost</th><th class=\"num\">calls lost</th></tr>\n"
            for restore in restores {
                // An edited report can hold any number here: one that is no device's stays unlinked text.
                let device = restore["device"]?.number.flatMap { Int(exactly: $0) } ?? -1
                body += "<tr><td class=\"num\"><a href=\"/devices/\(device)\">\(device)</a></td>"
                    + ["atSeconds", "backupAgeSeconds", "journalEventsLost", "callsLost"].map {
                        "<td class=\"num\">\(escape(plain(restore[$0] ?? .null)))</td>"
                    }.joined() + "</tr>\n"
            }
            body += "</table></details>\n"
        }
        return layout("Run, seed \(manifest.seed)", section: .run, body)
    }

    // MARK: - The fleet

    static func fleet(_ run: InspectedRun) -> String {
        let columns: [(key: String, label: String)] = [
            ("number", "device"), ("id", "id"), ("calls", "calls"), ("epoch", "epoch"), ("restores", "restores"),
            ("backups", "backups"), ("largestBacklog", "largest backlog"),
        ]
        let body = """
            <h1>Fleet: \(run.manifest.devices.count) devices</h1>
            <div data-fleet>
            <div class="controls"><input class="filter" type="search" placeholder="device number, part of an id, or restores>0" aria-label="Filter devices" size="34">
            <button class="previous" type="button">Previous</button><button class="next" type="button">Next</button><span class="note shown"></span></div>
            <table><thead><tr>\(columns.map { "<th class=\"sortable\(["id"].contains($0.key) ? "" : " num")\" data-column=\"\($0.key)\" data-label=\"\($0.label)\">\($0.label)</th>" }.joined())</tr></thead>
            <tbody></tbody></table>
            <script type="application/json">\(embedded(.array(run.deviceFigures.map(JSONValue.object))))</script>
            </div>
            <p class="muted">Click a column to sort; a device's number opens its page. Filter with a number, part of an id, or a condition on a column such as <code>restores&gt;0</code> or <code>largestBacklog&gt;=20</code>.</p>
            """
        return layout("Fleet", section: .fleet, body)
    }

    // MARK: - One device

    static func device(_ run: InspectedRun, _ device: RunManifest.Device) throws -> String {
        let store = try run.deviceStore(device)
        var body = "<h1>Device \(device.number) <span class=\"muted mono\">\(escape(device.id))</span></h1>\n<div class=\"grid\">\n"
        body += "<section><h2>At the end of the run</h2><table>\n"
        if let figures = run.deviceFigures.first(where: { $0["number"]?.number == Double(device.number) }) {
            for member in figures.members where member.key != "number" && member.key != "id" {
                body += row(member.key, escape(plain(member.value)), numeric: true)
            }
        }
        if let sync = try? store.syncStatus() {
            body += row("outbox head", "<code>\(sync.head)</code>") + row("acknowledged by the cloud", "<code>\(sync.acknowledged)</code>")
                + row("durable in a cloud backup", "<code>\(sync.durable)</code>") + row("waiting to be sent", "\(sync.pending)")
        }
        body += "</table></section>\n"
        // What the cloud holds of the device, per epoch: its acknowledgements.
        body += "<section><h2>What the cloud holds of it</h2>"
        if let cloud = try? run.cloud(), let held = try? cloud.heldEpochsByDevice(app: store.app, device: store.deviceID)[store.deviceID] {
            body += "<table><tr><th class=\"num\">epoch</th><th class=\"num\">last seq held</th></tr>\n"
                + held.sorted { $0.key < $1.key }.map { "<tr><td class=\"num\">\($0.key)</td><td class=\"num\">\($0.value)</td></tr>" }
                    .joined(separator: "\n") + "</table>"
        } else {
            body += "<p class=\"muted\">The cloud holds nothing of this device, or its store cannot be read.</p>"
        }
        body += "</section>\n</div>\n"

        var tally = JournalTally()
        var perMinute: [Int64: Int] = [:]
        var recent: [JournalRecord] = []
        let scan = try store.scanJournal { record in
            tally.add(record)
            perMinute[record.time.millisecondsSince1970 / 60_000, default: 0] += 1
            recent.append(record)
            if recent.count > 50 { recent.removeFirst() }
            return true
        }
        body += "<h2>Journal: \(tally.events) events</h2>\n"
        if let stop = scan.stop { body += "<p class=\"fail\">The journal stops being readable after seq \(scan.lastSeq?.rawValue ?? 0): \(escape("\(stop)"))</p>\n" }
        body += "<div class=\"grid\"><section><table><tr><th>kind</th><th class=\"num\">events</th></tr>\n"
        if case .object(let kinds) = JSONValue.object(tally.byKindJSON) {
            for member in kinds.members { body += row(member.key, escape(plain(member.value)), numeric: true) }
        }
        body += "</table></section><section>\(minuteChart(perMinute, caption: "Journal events per minute", axis: "minutes of the device's clock from its first event"))</section></div>\n"

        // Its outbox and what the cloud logged from it, over time, from the
        // same reading of its store and the cloud's log as `trace device:N`.
        let trace = Tracer(devices: [TraceDevice(label: "device \(device.number)", store: store)], cloud: try? run.cloud())
            .trace(.device(String(device.number)))
        var waiting: [Int64: Int] = [:]
        var logged: [Int64: Int] = [:]
        var frames: [String] = []
        for step in trace.steps {
            switch (step.place, step.position) {
            case (.device, .outbox):
                waiting[step.time.millisecondsSince1970 / 60_000, default: 0] += 1
            case (.cloud, .log(let app, let row, _, _, let epoch, let first, let last, nil)) where step.event == "frame":
                logged[step.time.millisecondsSince1970 / 60_000, default: 0] += Int(last - first + 1)
                frames.append("<tr><td class=\"num\">\(row)</td><td>\(escape(app.rawValue))</td><td>\(escape(step.time.description))</td>"
                              + "<td class=\"num\">\(epoch)</td><td class=\"num\">\(first)…\(last)</td></tr>")
            default:
                break
            }
        }
        body += "<h2>Its outbox and what the cloud logged from it</h2>\n<div class=\"grid\">"
        body += "<section>" + (waiting.isEmpty ? "<p>Nothing waits in its outbox.</p>"
            : minuteChart(waiting, caption: "Messages still in its outbox, by the minute their journal event was written",
                          axis: "minutes of the device's clock from its first waiting message")) + "</section>"
        body += "<section>" + (logged.isEmpty ? "<p>The cloud logged nothing from it.</p>"
            : minuteChart(logged, caption: "Messages the cloud logged from it (acknowledged), per minute of the cloud's clock",
                          axis: "minutes of the cloud's clock from the first frame")) + "</section></div>\n"
        if !frames.isEmpty {
            body += "<details\(frames.count <= 20 ? " open" : "")><summary>\(frames.count) frames the cloud logged from it</summary>"
                + "<table><tr><th class=\"num\">log row</th><th>app</th><th>received</th><th class=\"num\">epoch</th><th class=\"num\">messages</th></tr>\n"
                + frames.joined(separator: "\n") + "</table></details>\n"
        }
        for problem in trace.problems { body += "<p class=\"fail\">\(escape(problem))</p>\n" }
        body += "<h2>Its faults in the run</h2>\n"
        var faults: [String] = []
        if case .array(let events)? = run.report["events"] {
            for event in events where event["device"]?.number == Double(device.number) {
                guard case .string(let kind)? = event["kind"], let at = event["atSeconds"]?.number else { continue }
                faults.append("<tr><td class=\"num\">\(format(at))</td><td>\(escape(kind))</td></tr>")
            }
        }
        body += faults.isEmpty ? "<p class=\"muted\">None recorded.</p>\n"
            : "<details\(faults.count <= 20 ? " open" : "")><summary>\(faults.count) events</summary><table><tr><th class=\"num\">virtual s</th><th>what</th></tr>\n"
                + faults.joined(separator: "\n") + "</table></details>\n"
        body += "<h2>The last \(recent.count) journal events</h2>\n<table class=\"steps\"><tr><th class=\"num\">seq</th><th>event</th></tr>\n"
        for record in recent.reversed() {
            body += "<tr><td class=\"num\">\(record.seq.rawValue)</td><td class=\"mono\">\(escape(RecordFormat.line(record)))</td></tr>\n"
        }
        body += "</table>\n<p class=\"muted\">All of it: <code>sightline journal tail --run \(escape(run.folder)) --device \(device.number) -n 1000</code>; "
            + "its trace: <a href=\"/trace?q=device:\(device.number)\">device:\(device.number)</a>.</p>\n"
        return layout("Device \(device.number)", section: .device, body)
    }

    /// Counts per minute, as bars with ticks on both axes.
    static func minuteChart(_ perMinute: [Int64: Int], caption: String, axis: String) -> String {
        guard let first = perMinute.keys.min(), let last = perMinute.keys.max() else { return "" }
        let (width, height, left, bottom, top) = (480.0, 200.0, 52.0, 36.0, 8.0)
        let minutes = Int(last - first) + 1
        let scale = ChartScale(maximum: Double(perMinute.values.max() ?? 1), ticks: 4)
        let (yStep, yTop) = (scale.step, scale.top)
        let slot = (width - left - 10) / Double(minutes)
        var svg = "<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" width=\"100%\" role=\"img\">"
        for tick in stride(from: 0.0, through: yTop, by: yStep) {
            let y = height - bottom - tick / yTop * (height - bottom - top)
            svg += "<line x1=\"\(left)\" y1=\"\(y)\" x2=\"\(width - 10)\" y2=\"\(y)\" stroke=\"#eee\"/>"
                + "<text x=\"\(left - 6)\" y=\"\(y + 4)\" text-anchor=\"end\">\(Int(tick))</text>"
        }
        for (minute, count) in perMinute {
            let barHeight = Double(count) / yTop * (height - bottom - top)
            svg += "<rect x=\"\(left + Double(Int(minute - first)) * slot)\" y=\"\(height - bottom - barHeight)\" "
                + "width=\"\(max(slot - 1, 1))\" height=\"\(barHeight)\" fill=\"#0a66c2\"/>"
        }
        let xStep = max(1, Int(ChartScale(maximum: Double(minutes)).step))
        for minute in stride(from: 0, through: minutes - 1, by: xStep) {
            let x = left + (Double(minute) + 0.5) * slot
            svg += "<text x=\"\(x)\" y=\"\(height - bottom + 16)\" text-anchor=\"\(minute == 0 ? "start" : "middle")\">\(minute)</text>"
        }
        svg += "<text x=\"\((left + width) / 2)\" y=\"\(height - 4)\" text-anchor=\"middle\">\(escape(axis))</text>"
        return "<figure style=\"margin:0\">" + svg + "</svg><figcaption class=\"muted\">\(escape(caption))</figcaption></figure>"
    }

    // MARK: - The cloud

    static func cloud(_ run: InspectedRun) throws -> String {
        let cloud = try run.cloud()
        let stats = try cloud.stats()
        var body = "<h1>Cloud <span class=\"muted mono\">\(escape(cloud.displayName))</span></h1>\n<div class=\"grid\">\n<section><h2>Totals</h2><table>\n"
        for (name, value) in [("apps", stats.apps), ("devices enrolled", stats.devices), ("log rows", stats.logRows), ("messages", stats.messages),
                              ("hashes", stats.hashes), ("public items", stats.publicItems), ("content wanted", stats.wanted),
                              ("crawled pages", stats.pages), ("equivocations", stats.equivocations)] {
            body += row(name, "\(value)", numeric: true)
        }
        body += row("K", "\(stats.threshold)", numeric: true) + row("content agreement", "\(stats.agreement)", numeric: true)
        body += "</table></section>\n<section><h2>Log rows by app</h2><table><tr><th>app</th><th class=\"num\">rows</th><th>head</th></tr>\n"
        for head in try cloud.logHeads() {
            body += "<tr><td>\(escape(head.app.rawValue))</td><td class=\"num\">\(head.rows)</td><td class=\"mono\">\(head.hash.prefix(8).map { String(format: "%02x", $0) }.joined())…</td></tr>\n"
        }
        body += "</table></section>\n</div>\n<h2>Public index over virtual time</h2>\n"
        var samples: [(Double, Double)] = []
        if case .array(let timeline)? = run.report["timeline"] {
            samples = timeline.compactMap { sample in
                guard let at = sample["atSeconds"]?.number, let items = sample["publicItems"]?.number else { return nil }
                return (at, items)
            }
        }
        body += growthChart(samples)
        for head in try cloud.logHeads() {
            let entries = try cloud.entries(app: head.app)
            let ranked = entries.sorted {
                ($0.popularity.engaged, $0.popularity.views) > ($1.popularity.engaged, $1.popularity.views)
            }.prefix(20)
            body += "<h2>Popularity in \(escape(head.app.rawValue)): the \(ranked.count) most engaged of \(entries.count) hashes</h2>\n"
                + "<table><tr><th>hash</th><th>title</th><th class=\"num\">live votes</th><th class=\"num\">views</th><th class=\"num\">shown</th><th class=\"num\">engaged</th></tr>\n"
            for entry in ranked {
                let hex = entry.hash.map(\.hex) ?? ""
                let title = entry.content.map { escape($0.title ?? "") } ?? "<span class=\"muted\">not public</span>"
                body += "<tr><td class=\"mono\"><a href=\"/trace?q=hash:\(hex)\">\(hex.prefix(12))…</a></td><td>\(title)</td>"
                    + "<td class=\"num\">\(entry.liveVotes)</td><td class=\"num\">\(entry.popularity.views)</td>"
                    + "<td class=\"num\">\(entry.popularity.shown)</td><td class=\"num\">\(entry.popularity.engaged)</td></tr>\n"
            }
            body += "</table>\n"
        }
        return layout("Cloud", section: .cloud, body)
    }

    /// The public index's size over virtual time, with ticks on both axes.
    static func growthChart(_ samples: [(Double, Double)]) -> String {
        guard !samples.isEmpty else { return "<p class=\"muted\">The report has no timeline.</p>" }
        let (width, height, left, bottom, top) = (960.0, 220.0, 52.0, 36.0, 8.0)
        let maxX = max(samples.map(\.0).max() ?? 1, 1), maxY = max(samples.map(\.1).max() ?? 1, 1)
        let xScale = ChartScale(maximum: maxX, ticks: 8), yScale = ChartScale(maximum: maxY, ticks: 4)
        let (xStep, xTop, yStep, yTop) = (xScale.step, xScale.top, yScale.step, yScale.top)
        func px(_ x: Double) -> Double { left + x / xTop * (width - left - 14) }
        func py(_ y: Double) -> Double { height - bottom - y / yTop * (height - bottom - top) }
        var svg = "<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" width=\"100%\" role=\"img\">"
        for tick in stride(from: 0.0, through: yTop, by: yStep) {
            svg += "<line x1=\"\(left)\" y1=\"\(py(tick))\" x2=\"\(width - 14)\" y2=\"\(py(tick))\" stroke=\"#eee\"/>"
                + "<text x=\"\(left - 6)\" y=\"\(py(tick) + 4)\" text-anchor=\"end\">\(Int(tick))</text>"
        }
        for tick in stride(from: 0.0, through: xTop, by: xStep) {
            svg += "<text x=\"\(px(tick))\" y=\"\(height - bottom + 16)\" text-anchor=\"\(tick == 0 ? "start" : tick >= xTop ? "end" : "middle")\">\(Int(tick))</text>"
        }
        svg += "<text x=\"\((left + width) / 2)\" y=\"\(height - 4)\" text-anchor=\"middle\">virtual seconds</text>"
        svg += "<polyline fill=\"none\" stroke=\"#0a66c2\" stroke-width=\"1.6\" points=\"\(samples.map { String(format: "%.1f,%.1f", px($0.0), py($0.1)) }.joined(separator: " "))\"/>"
        return svg + "</svg>"
    }

    // MARK: - A trace

    static func trace(query: String, _ trace: Trace?, error: String?) -> String {
        var body = "<h1>Trace</h1>\n"
        if let error {
            body += "<p class=\"fail\">\(escape(error))</p>\n<p>Give an item id, an activity key, a URL, a public hash (64 hex digits) or <code>device:N</code>; "
                + "<code>id:</code>, <code>url:</code>, <code>hash:</code> say which.</p>\n"
            return layout("Trace", section: .trace, query: query, body)
        }
        guard let trace else { return layout("Trace", section: .trace, query: query, body) }
        let read = "\(trace.devicesRead) device store(s)" + (trace.cloudRead ? " and the cloud store" : ", no cloud store")
        body += "<p class=\"trace\">\(escape(trace.target.description)): \(trace.steps.count) step(s) across \(read).</p>\n"
        for problem in trace.problems { body += "<p class=\"fail\">\(escape(problem))</p>\n" }
        if !trace.verdicts.isEmpty {
            body += "<h2>Why it is public or not</h2>\n"
            for verdict in trace.verdicts {
                body += "<section class=\"verdict \(verdict.isPublic ? "ok" : "bad")\"><p><strong>\(verdict.isPublic ? "public" : "not public")</strong> "
                    + "<span class=\"mono\">\(verdict.hash.hex)</span> (\(escape(verdict.app.rawValue)))</p><ul>"
                    + verdict.reasons.map { "<li>\(escape($0))</li>" }.joined() + "</ul></section>\n"
            }
        }
        if !trace.steps.isEmpty {
            body += "<h2>Steps</h2>\n<table class=\"steps\"><tr><th>time</th><th>where</th><th>at</th><th>what</th></tr>\n"
            for row in trace.rows.prefix(5_000) {
                body += "<tr>" + row.map { "<td>\(escape($0))</td>" }.joined() + "</tr>\n"
            }
            body += "</table>\n"
            if trace.rows.count > 5_000 { body += "<p class=\"muted\">The first 5,000 of \(trace.rows.count) steps; <code>sightline trace</code> prints them all.</p>\n" }
        } else {
            body += "<p>Nothing in the \(read) read mentions it.</p>\n"
        }
        return layout("Trace \(trace.target.description)", section: .trace, query: query, body)
    }

    // MARK: - Pieces

    static func row(_ name: String, _ value: String, numeric: Bool = false) -> String {
        "<tr><th>\(escape(name))</th><td\(numeric ? " class=\"num\"" : "")>\(value)</td></tr>\n"
    }

    /// A JSON value as plain text: strings without quotes, numbers as written.
    static func plain(_ value: JSONValue) -> String {
        if case .string(let text) = value { return text }
        return JSONWriter.compact(value)
    }

    static func format(_ seconds: Double) -> String {
        String(format: "%.1f", seconds)
    }

    /// JSON for a `<script type="application/json">`: `<` written as `\u003c`,
    /// so no string in it can close the script.
    static func embedded(_ value: JSONValue) -> String {
        JSONWriter.compact(value).replacingOccurrences(of: "<", with: "\\u003c")
    }

    static func escape(_ text: String) -> String {
        HTMLText.escape(text)
    }
}
