import Foundation

extension SimulationReport {
    /// `report.html`: one self-contained page (inline CSS and SVG, no
    /// scripts) with the summary, the invariants, the restores and charts of
    /// the backlog and the public index over virtual time, faults by kind and
    /// each device's largest backlog.
    public var html: String {
        let status = passed ? "passed" : "FAILED"
        var page = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8">
            <title>Sightline simulation, seed \(options.seed): \(status)</title>
            <style>
            body { font: 14px/1.45 -apple-system, system-ui, sans-serif; margin: 2rem auto; max-width: 980px; color: #1d1d1f; padding: 0 1rem; }
            h1 { font-size: 1.5rem; } h2 { font-size: 1.1rem; margin-top: 2rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
            table { border-collapse: collapse; width: 100%; } td, th { text-align: left; padding: .25rem .6rem; border-bottom: 1px solid #eee; vertical-align: top; }
            th { color: #555; font-weight: 600; } code { font-size: 12px; background: #f4f4f6; padding: .1rem .3rem; border-radius: 3px; }
            .pass { color: #1a7f37; font-weight: 600; } .fail { color: #c62828; font-weight: 600; }
            .charts { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; } figure { margin: 0; } figcaption { color: #555; font-size: 12px; }
            svg text { font: 11px system-ui, sans-serif; fill: #555; }
            </style></head><body>
            <h1>Simulation, seed \(options.seed): <span class="\(passed ? "pass" : "fail")">\(status)</span></h1>
            <p>\(options.replayNote.map { escape("Not replayable: " + $0.dropFirst("not replayable: ".count) + ". Rerun") } ?? "Replay") \
            with <code>\(escape(replayCommand))</code>. Digest <code>\(digest)</code>.</p>

            """
        page += "<h2>Summary</h2>\n<table>\n"
        for row in summaryRows where row.first != "pass" && row.first != "FAIL" {
            page += "<tr><th>\(escape(row[0]))</th><td>\(escape(row.dropFirst().joined(separator: " ")))</td></tr>\n"
        }
        page += "</table>\n<h2>Invariants</h2>\n<table>\n"
        // Failures first, each with every problem it found.
        for invariant in failures + invariants.filter(\.passed) {
            var cell = escape(invariant.detail)
            if invariant.problems.count > 1 {
                cell += "<details><summary>all \(invariant.problems.count)</summary><ul>"
                    + invariant.problems.map { "<li>\(escape($0))</li>" }.joined() + "</ul></details>"
            }
            page += "<tr><td class=\"\(invariant.passed ? "pass" : "fail")\">\(invariant.passed ? "pass" : "FAIL")</td>"
                + "<td><code>\(invariant.name)</code></td><td>\(cell)</td></tr>\n"
        }
        page += "</table>\n<h2>Over virtual time</h2>\n<div class=\"charts\">\n"
        let seconds = timeline.map { Double($0.at) / 1_000 }
        page += figure(lineChart(x: seconds, y: timeline.map { Double($0.backlog) }, down: timeline.map { !$0.cloudUp }),
                       "Outbox messages waiting on all devices, by virtual second (shaded: cloud down)")
        page += figure(lineChart(x: seconds, y: timeline.map { Double($0.publicItems) }, down: timeline.map { !$0.cloudUp }),
                       "Public index size, by virtual second")
        page += "</div>\n<div class=\"charts\">\n"
        let fired = FaultKind.allCases.filter { (faults[$0] ?? 0) > 0 }
        page += figure(barChart(labels: fired.map(\.rawValue), values: fired.map { Double(faults[$0]!) }),
                       fired.isEmpty ? "No faults were injected" : "Faults by kind")
        page += figure(barChart(labels: deviceLag.indices.map { "\($0)" }, values: deviceLag.map(Double.init)),
                       "Largest backlog each device had (messages), by device")
        page += "</div>\n"
        if !restores.isEmpty {
            page += "<h2>Device restores</h2>\n<table><tr><th>device</th><th>at (virtual s)</th><th>backup age (s)</th>"
                + "<th>journal events lost</th><th>calls lost</th></tr>\n"
            for restore in restores {
                page += "<tr><td>\(restore.device)</td><td>\(String(format: "%.1f", Double(restore.at) / 1_000))</td>"
                    + "<td>\(String(format: "%.1f", Double(restore.backupAge) / 1_000))</td>"
                    + "<td>\(restore.journalEventsLost)</td><td>\(restore.callsLost)</td></tr>\n"
            }
            page += "</table>\n"
        }
        page += "<h2>Fault plan</h2>\n<table>\n"
        for (name, value) in plan.summary {
            page += "<tr><th>\(name)</th><td>\(value)</td></tr>\n"
        }
        page += "</table>\n</body></html>\n"
        return page
    }

    private func figure(_ svg: String, _ caption: String) -> String {
        "<figure>\(svg)<figcaption>\(escape(caption))</figcaption></figure>\n"
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    private static let width = 460.0, height = 180.0, left = 44.0, bottom = 22.0

    private func lineChart(x: [Double], y: [Double], down: [Bool]) -> String {
        let (width, height, left, bottom) = (Self.width, Self.height, Self.left, Self.bottom)
        let maxX = max(x.max() ?? 1, 1), maxY = max(y.max() ?? 1, 1)
        func px(_ value: Double) -> Double { left + value / maxX * (width - left - 8) }
        func py(_ value: Double) -> Double { height - bottom - value / maxY * (height - bottom - 10) }
        var svg = "<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" width=\"100%\" role=\"img\">"
        for index in x.indices where down[index] {
            let next = index + 1 < x.count ? x[index + 1] : x[index]
            svg += "<rect x=\"\(px(x[index]))\" y=\"10\" width=\"\(max(px(next) - px(x[index]), 1))\" "
                + "height=\"\(height - bottom - 10)\" fill=\"#fde2e2\"/>"
        }
        svg += axes(maxX: maxX, maxY: maxY, unit: "s")
        let points = zip(x, y).map { "\(px($0)),\(py($1))" }.joined(separator: " ")
        svg += "<polyline fill=\"none\" stroke=\"#0a66c2\" stroke-width=\"1.6\" points=\"\(points)\"/></svg>"
        return svg
    }

    private func barChart(labels: [String], values: [Double]) -> String {
        let (width, height, left, bottom) = (Self.width, Self.height, Self.left, Self.bottom)
        let maxY = max(values.max() ?? 1, 1)
        var svg = "<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" width=\"100%\" role=\"img\">"
        svg += axes(maxX: nil, maxY: maxY, unit: "")
        let slot = (width - left - 8) / Double(max(values.count, 1))
        let showLabels = values.count <= 16
        for (index, value) in values.enumerated() {
            let barHeight = value / maxY * (height - bottom - 10)
            let x = left + Double(index) * slot + slot * 0.15
            svg += "<rect x=\"\(x)\" y=\"\(height - bottom - barHeight)\" width=\"\(slot * 0.7)\" height=\"\(barHeight)\" fill=\"#0a66c2\">"
                + "<title>\(escape(labels[index])): \(Int(value))</title></rect>"
            if showLabels {
                let label = labels[index].count > 9 ? String(labels[index].prefix(8)) + "…" : labels[index]
                svg += "<text x=\"\(x + slot * 0.35)\" y=\"\(height - 6)\" text-anchor=\"middle\">\(escape(label))</text>"
            }
        }
        return svg + "</svg>"
    }

    private func axes(maxX: Double?, maxY: Double, unit: String) -> String {
        let (width, height, left, bottom) = (Self.width, Self.height, Self.left, Self.bottom)
        var svg = "<line x1=\"\(left)\" y1=\"\(height - bottom)\" x2=\"\(width - 8)\" y2=\"\(height - bottom)\" stroke=\"#999\"/>"
            + "<line x1=\"\(left)\" y1=\"10\" x2=\"\(left)\" y2=\"\(height - bottom)\" stroke=\"#999\"/>"
            + "<text x=\"\(left - 4)\" y=\"14\" text-anchor=\"end\">\(Int(maxY))</text>"
            + "<text x=\"\(left - 4)\" y=\"\(height - bottom)\" text-anchor=\"end\">0</text>"
        if let maxX {
            svg += "<text x=\"\(width - 8)\" y=\"\(height - 6)\" text-anchor=\"end\">\(Int(maxX)) \(unit)</text>"
                + "<text x=\"\(left)\" y=\"\(height - 6)\">0</text>"
        }
        return svg
    }
}
