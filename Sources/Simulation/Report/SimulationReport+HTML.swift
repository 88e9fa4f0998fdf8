import Foundation
import IndexModel

extension SimulationReport {
    /// `report.html`: one self-contained page (inline CSS and SVG, no
    /// scripts). The verdict comes first, with every failed invariant and
    /// finding in full; then the timeline (every fault kind, backups,
    /// snapshots and cloud outages on one axis of virtual time), the
    /// backlog and the public index over time, faults by kind, the devices
    /// with the largest backlogs, the summary, the restores (the first ten
    /// open, the rest folded) and the fault plan. Charts have ticks and
    /// units on both axes, and labels are whole.
    public var html: String {
        let status = passed ? "passed" : "FAILED"
        var page = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Sightline simulation, seed \(options.seed): \(status)</title>
            <style>\(ReportStyle.css)</style></head><body>
            <h1>Simulation, seed \(options.seed): <span class="\(passed ? "pass" : "fail")">\(status)</span></h1>

            """
        page += verdict
        page += "<h2>Timeline</h2>\n"
        page += figure(timelineChart, "Faults, backups and snapshots over virtual time, one row each with its count; "
                       + "shaded: the cloud was down" + (eventsLeftOut > 0 ? "; the first \(events.count) events are drawn, \(eventsLeftOut) more were counted" : ""))
        page += "<div class=\"charts\">\n"
        let seconds = timeline.map { Double($0.at) / 1_000 }
        let down = timeline.map { !$0.cloudUp }
        page += figure(lineChart(x: seconds, y: timeline.map { Double($0.backlog) }, down: down, yUnit: "messages"),
                       "Outbox messages waiting on all devices (shaded: cloud down)")
        page += figure(lineChart(x: seconds, y: timeline.map { Double($0.publicItems) }, down: down, yUnit: "entries"),
                       "Public index size")
        page += "</div>\n<div class=\"charts\">\n"
        let fired = FaultKind.allCases.filter { (faults[$0] ?? 0) > 0 }
        page += figure(fired.isEmpty ? "<p class=\"none\">No faults were injected.</p>"
                       : horizontalBars(fired.map { ($0.rawValue, faults[$0]!) }), "Faults by kind")
        let largest = deviceLag.enumerated().sorted { $0.element != $1.element ? $0.element > $1.element : $0.offset < $1.offset }
            .prefix(15)
        let median = deviceLag.isEmpty ? 0 : deviceLag.sorted()[deviceLag.count / 2]
        page += figure(horizontalBars(largest.map { ("device \($0.offset)", $0.element) }),
                       "The \(largest.count) largest outbox backlogs of \(deviceLag.count) devices (messages); median \(median)")
        page += "</div>\n"
        page += "<h2>Summary</h2>\n<table>\n"
        for row in summaryRows where row.first != "pass" && row.first != "FAIL" {
            page += "<tr><th>\(escape(row[0]))</th><td>\(escape(row.dropFirst().joined(separator: " ")))</td></tr>\n"
        }
        page += "</table>\n<h2>Invariants</h2>\n<table>\n"
        for invariant in failures + invariants.filter(\.passed) {
            page += "<tr><td class=\"\(invariant.passed ? "pass" : "fail") name\">\(invariant.passed ? "pass" : "FAIL")</td>"
                + "<td class=\"name\"><code>\(invariant.name)</code></td><td>\(escape(invariant.detail))</td></tr>\n"
        }
        page += "</table>\n"
        if !restores.isEmpty {
            page += "<h2>Device restores</h2>\n"
            let header = "<tr><th>device</th><th>at (virtual s)</th><th>backup age (s)</th><th>journal events lost</th><th>calls lost</th></tr>\n"
            func rows(_ slice: ArraySlice<RestoreRecord>) -> String {
                slice.map { restore in
                    "<tr><td>\(restore.device)</td><td>\(String(format: "%.1f", Double(restore.at) / 1_000))</td>"
                        + "<td>\(String(format: "%.1f", Double(restore.backupAge) / 1_000))</td>"
                        + "<td>\(restore.journalEventsLost)</td><td>\(restore.callsLost)</td></tr>\n"
                }.joined()
            }
            page += "<table>\n" + header + rows(restores.prefix(10)) + "</table>\n"
            if restores.count > 10 {
                page += "<details><summary>\(restores.count - 10) more restores</summary>\n<table>\n" + header
                    + rows(restores.dropFirst(10)) + "</table></details>\n"
            }
        }
        page += "<h2>Fault plan</h2>\n<table>\n"
        for (name, value) in plan.summary {
            page += "<tr><th>\(name)</th><td>\(value)</td></tr>\n"
        }
        page += "</table>\n</body></html>\n"
        return page
    }

    /// The verdict, findings first: each failed invariant with all its
    /// problems, the simulator's findings, and how to run it again.
    private var verdict: String {
        var html = "<section class=\"verdict \(passed ? "ok" : "bad")\">\n"
        if passed {
            html += "<p><strong>All \(invariants.count) invariants held.</strong> "
                + (converged ? "The devices and the cloud converged \(String(format: "%.1f", Double(convergenceMilliseconds) / 1_000)) "
                    + "virtual seconds after the faults ended." : "") + "</p>\n"
        } else {
            html += "<p><strong>\(failures.count) of \(invariants.count) invariants failed.</strong></p>\n<ul class=\"failures\">\n"
            for failure in failures {
                html += "<li><code>\(failure.name)</code>: \(escape(failure.detail))"
                if failure.problems.count > 1 {
                    let shown = failure.problems.prefix(10)
                    html += "<ul>" + shown.map { "<li>\(escape($0))</li>" }.joined() + "</ul>"
                    if failure.problems.count > 10 {
                        html += "<details><summary>\(failure.problems.count - 10) more problems</summary><ul>"
                            + failure.problems.dropFirst(10).map { "<li>\(escape($0))</li>" }.joined() + "</ul></details>"
                    }
                }
                html += "</li>\n"
            }
            html += "</ul>\n"
        }
        if let sabotage = options.sabotage {
            html += "<p>Sabotaged on purpose (<code>\(sabotage.rawValue)</code>): \(escape(sabotage.summary)), so "
                + "<code>\(sabotage.breaks)</code> fails.</p>\n"
        }
        if !findings.isEmpty {
            html += "<p>Findings:</p><ul>" + findings.map { "<li>\(escape($0))</li>" }.joined() + "</ul>\n"
        }
        html += "<p>\(options.replayNote.map { escape("Not replayable: " + $0.dropFirst("not replayable: ".count) + ". Rerun") } ?? "Replay") "
            + "with <code>\(escape(replayCommand))</code>. Digest <code>\(digest)</code>.</p>\n</section>\n"
        return html
    }

    private func figure(_ body: String, _ caption: String) -> String {
        "<figure>\(body)<figcaption>\(escape(caption))</figcaption></figure>\n"
    }

    private func escape(_ text: String) -> String {
        HTMLText.escape(text)
    }

    // MARK: - Charts

    /// One row per fault kind that happened, then backups and snapshots,
    /// each event a tick at its virtual second; cloud outages shaded
    /// across every row. Events closer than a pixel share one tick.
    private var timelineChart: String {
        let rows = FaultKind.allCases.map(\.rawValue).filter { (faults[FaultKind(rawValue: $0)!] ?? 0) > 0 }
            + [RunEvent.deviceBackup, RunEvent.cloudSnapshot].filter { kind in events.contains { $0.kind == kind } }
        let counts = Dictionary(grouping: events, by: \.kind).mapValues(\.count)
        let (width, left, right, rowHeight, top) = (1000.0, 190.0, 14.0, 20.0, 8.0)
        let height = top + rowHeight * Double(max(rows.count, 1)) + 38
        let maxX = max(Double(virtualMilliseconds) / 1_000, 1)
        let scale = ChartScale(maximum: maxX)
        func px(_ seconds: Double) -> Double { left + seconds / scale.top * (width - left - right) }
        var svg = "<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" width=\"100%\" role=\"img\" class=\"timeline\">"
        let bottom = top + rowHeight * Double(max(rows.count, 1))
        svg += shadedOutages(px: px, top: top, bottom: bottom)
        for (index, kind) in rows.enumerated() {
            let y = top + rowHeight * Double(index)
            if index % 2 == 1 {
                svg += "<rect x=\"\(left)\" y=\"\(y)\" width=\"\(width - left - right)\" height=\"\(rowHeight)\" fill=\"#f6f7f9\"/>"
            }
            let count = kind == RunEvent.deviceBackup || kind == RunEvent.cloudSnapshot
                ? counts[kind] ?? 0 : faults[FaultKind(rawValue: kind)!] ?? 0
            svg += "<text x=\"\(left - 8)\" y=\"\(y + 14)\" text-anchor=\"end\">\(kind) (\(count))</text>"
            var columns = Set<Int>()
            var path = ""
            for event in events where event.kind == kind {
                let x = px(Double(event.at) / 1_000)
                guard columns.insert(Int(x)).inserted else { continue }
                path += "M\(String(format: "%.1f", x)) \(y + 3)v\(rowHeight - 6)"
            }
            svg += "<path d=\"\(path)\" stroke=\"\(ReportStyle.color(kind))\" stroke-width=\"1.5\"/>"
        }
        svg += xAxis(scale: scale, px: px, y: bottom, label: "virtual seconds", width: width, right: right)
        return svg + "</svg>"
    }

    /// The cloud-down spans of the timeline samples, shaded from `top` to `bottom`.
    private func shadedOutages(px: (Double) -> Double, top: Double, bottom: Double) -> String {
        var svg = ""
        for index in timeline.indices where !timeline[index].cloudUp {
            let start = Double(timeline[index].at) / 1_000
            let end = index + 1 < timeline.count ? Double(timeline[index + 1].at) / 1_000 : start
            svg += "<rect x=\"\(px(start))\" y=\"\(top)\" width=\"\(max(px(end) - px(start), 1))\" height=\"\(bottom - top)\" fill=\"#fde2e2\"/>"
        }
        return svg
    }

    private func lineChart(x: [Double], y: [Double], down: [Bool], yUnit: String) -> String {
        let (width, height, left, right, top, bottom) = (480.0, 230.0, 64.0, 14.0, 10.0, 40.0)
        let xScale = ChartScale(maximum: max(x.max() ?? 1, 1)), yScale = ChartScale(maximum: max(y.max() ?? 1, 1))
        func px(_ value: Double) -> Double { left + value / xScale.top * (width - left - right) }
        func py(_ value: Double) -> Double { height - bottom - value / yScale.top * (height - bottom - top) }
        var svg = "<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" width=\"100%\" role=\"img\">"
        svg += shadedOutages(px: px, top: top, bottom: height - bottom)
        for tick in yScale.ticks {
            svg += "<line x1=\"\(left)\" y1=\"\(py(tick))\" x2=\"\(width - right)\" y2=\"\(py(tick))\" stroke=\"#e4e4e7\"/>"
                + "<text x=\"\(left - 6)\" y=\"\(py(tick) + 4)\" text-anchor=\"end\">\(ChartScale.label(tick))</text>"
        }
        svg += "<text x=\"14\" y=\"\((height - bottom + top) / 2)\" text-anchor=\"middle\" "
            + "transform=\"rotate(-90 14 \((height - bottom + top) / 2))\">\(yUnit)</text>"
        svg += xAxis(scale: xScale, px: px, y: height - bottom, label: "virtual seconds", width: width, right: right)
        let points = zip(x, y).map { String(format: "%.1f,%.1f", px($0), py($1)) }.joined(separator: " ")
        svg += "<polyline fill=\"none\" stroke=\"#0a66c2\" stroke-width=\"1.6\" points=\"\(points)\"/></svg>"
        return svg
    }

    /// The x axis at `y`: its line, ticks with their values, and its label and unit below.
    private func xAxis(scale: ChartScale, px: (Double) -> Double, y: Double, label: String, width: Double, right: Double) -> String {
        var svg = "<line x1=\"\(px(0))\" y1=\"\(y)\" x2=\"\(width - right)\" y2=\"\(y)\" stroke=\"#999\"/>"
        let ticks = scale.ticks
        for (index, tick) in ticks.enumerated() {
            let anchor = index == ticks.count - 1 ? "end" : index == 0 ? "start" : "middle"
            svg += "<line x1=\"\(px(tick))\" y1=\"\(y)\" x2=\"\(px(tick))\" y2=\"\(y + 4)\" stroke=\"#999\"/>"
                + "<text x=\"\(px(tick))\" y=\"\(y + 16)\" text-anchor=\"\(anchor)\">\(ChartScale.label(tick))</text>"
        }
        return svg + "<text x=\"\((px(0) + width - right) / 2)\" y=\"\(y + 32)\" text-anchor=\"middle\">\(label)</text>"
    }

    /// A bar per label, longest first as given, with its value at the bar's
    /// end; a bar is at least 2 pixels long, so a count of 2 beside one of
    /// 167 still shows.
    private func horizontalBars(_ bars: [(label: String, value: Int)]) -> String {
        let (width, left, right, rowHeight) = (480.0, 130.0, 60.0, 20.0)
        let height = rowHeight * Double(max(bars.count, 1)) + 8
        let maximum = Double(max(bars.map(\.value).max() ?? 1, 1))
        var svg = "<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" width=\"100%\" role=\"img\">"
        for (index, bar) in bars.enumerated() {
            let y = 4 + rowHeight * Double(index)
            let length = max(2, Double(bar.value) / maximum * (width - left - right))
            svg += "<text x=\"\(left - 8)\" y=\"\(y + 14)\" text-anchor=\"end\">\(escape(bar.label))</text>"
                + "<rect x=\"\(left)\" y=\"\(y + 3)\" width=\"\(length)\" height=\"\(rowHeight - 6)\" fill=\"#0a66c2\"/>"
                + "<text x=\"\(left + length + 6)\" y=\"\(y + 14)\">\(bar.value)</text>"
        }
        return svg + "</svg>"
    }
}

/// An axis from 0 to a round number at or above the data's maximum, with
/// ticks at steps of 1, 2 or 5 times a power of ten, about `ticks` of them
/// (the report's charts and the inspector's).
public struct ChartScale: Sendable {
    public let step: Double
    public let top: Double

    public init(maximum: Double, ticks: Double = 5) {
        let rough = max(maximum, 1e-9) / ticks
        let power = pow(10, floor(log10(rough)))
        let step = [1.0, 2, 5, 10].map { $0 * power }.first { $0 >= rough } ?? 10 * power
        self.step = step
        top = max(step, ceil(maximum / step) * step)
    }

    public var ticks: [Double] {
        stride(from: 0, through: top + step / 2, by: step).map { $0 }
    }

    /// 1200 as "1,200", 2500000 as "2.5M", 0.5 as "0.5".
    public static func label(_ value: Double) -> String {
        if value >= 1_000_000 { return String(format: "%gM", value / 1_000_000) }
        if value == value.rounded() {
            let whole = Int(value)
            return whole >= 10_000 ? String(format: "%gk", value / 1_000) : String(whole)
        }
        return String(format: "%g", value)
    }
}

/// The report's CSS and colours, shared by its charts (and the inspector's timeline).
public enum ReportStyle {
    static let css = """
        body { font: 14px/1.45 -apple-system, system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; color: #1d1d1f; padding: 0 1rem; }
        h1 { font-size: 1.5rem; } h2 { font-size: 1.1rem; margin-top: 2rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
        table { border-collapse: collapse; width: 100%; } td, th { text-align: left; padding: .25rem .6rem; border-bottom: 1px solid #eee; vertical-align: top; }
        th { color: #555; font-weight: 600; } code { font-size: 12px; background: #f4f4f6; padding: .1rem .3rem; border-radius: 3px; overflow-wrap: anywhere; }
        .pass { color: #1a7f37; font-weight: 600; } .fail { color: #c62828; font-weight: 600; }
        .verdict { border-left: 4px solid; padding: .3rem 1rem; margin: 1rem 0; } .verdict.ok { border-color: #1a7f37; background: #f1f8f3; }
        .verdict.bad { border-color: #c62828; background: #fdf3f3; } .failures li { margin: .3rem 0; }
        .charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(340px, 1fr)); gap: 1rem; margin-top: 1rem; }
        figure { margin: 0; } figcaption { color: #555; font-size: 12px; } .none { color: #555; }
        svg text { font: 12px system-ui, sans-serif; fill: #444; } svg.timeline text { font-size: 13px; }
        td { overflow-wrap: anywhere; } td.name, td.name code { white-space: nowrap; overflow-wrap: normal; }
        """

    /// A fault kind's colour: the network's in blues, devices' in ambers, the cloud's in reds, backups in greens.
    public static func color(_ kind: String) -> String {
        switch kind {
        case "requestLost", "replyLost", "duplicated", "replayed", "replyReplayed", "delayed", "bitFlip", "partition": "#2563eb"
        case "offline", "clockJump", "deviceCrash", "deviceRestore": "#b45309"
        case "cloudCrash", "cloudRestore": "#c62828"
        case "hostileFrame": "#7c3aed"
        default: "#15803d"
        }
    }
}
