import CloudCore
import Foundation
import IndexModel

/// The admin listener's `/`: what an operator checks first, on one small
/// HTML page with no script: the build, the store, K and the agreement,
/// each app's sizes, the last good snapshot, and links to the admin routes.
/// Every value from the store is escaped.
struct StatusPage {
    let build: BuildInfo
    let store: String
    let threshold: Int
    let agreement: Int
    /// Nil when the store could not be read; the page says so.
    let apps: [AppFigures]?
    let snapshot: (interval: Int?, directory: String?, last: SnapshotStatus.Written?, age: Double?)
    let uptime: Double

    var html: String {
        var rows = ""
        if let apps {
            for app in apps {
                rows += "<tr><td>\(escape(app.app.rawValue))</td><td>\(app.logRows)</td><td>\(app.publicItems)</td><td>\(app.devices)</td></tr>\n"
            }
            if apps.isEmpty { rows = "<tr><td colspan=\"4\">no app is registered</td></tr>\n" }
        } else {
            rows = "<tr><td colspan=\"4\" class=\"bad\">the store did not answer within 2 s, or could not be read</td></tr>\n"
        }
        let snapshotText: String
        if let interval = snapshot.interval {
            let last = snapshot.last.map { written in
                "last good snapshot \(escape(written.file)), written \(StatusPage.timestamp(written.time)), "
                    + "\(StatusPage.duration(snapshot.age ?? 0)) ago"
            } ?? "no snapshot yet (\(StatusPage.duration(snapshot.age ?? 0)) since the server started)"
            snapshotText = "every \(StatusPage.duration(Double(interval))) into \(escape(snapshot.directory ?? "")); \(last)"
        } else {
            snapshotText = "periodic snapshots are off (cloud serve --snapshot-every)"
        }
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Sightline cloud</title>
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <style>
            body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 56em; padding: 0 1em; color: #222; }
            h1 { font-size: 1.4em; } table { border-collapse: collapse; }
            td, th { padding: .2em .9em .2em 0; text-align: left; } td + td, th + th { text-align: right; }
            dt { font-weight: 600; } dd { margin: 0 0 .6em 0; } .bad { color: #b00020; } code { font-size: .95em; }
            </style></head><body>
            <h1>Sightline cloud</h1>
            <dl>
            <dt>Build</dt><dd><code>\(escape(build.version))</code></dd>
            <dt>Store</dt><dd><code>\(escape(store))</code></dd>
            <dt>Public index</dt><dd>K = \(threshold) live votes; content agreement \(agreement)</dd>
            <dt>Snapshots</dt><dd>\(snapshotText)</dd>
            <dt>Up</dt><dd>\(StatusPage.duration(uptime))</dd>
            </dl>
            <h2>Apps</h2>
            <table><thead><tr><th>app</th><th>log rows</th><th>public items</th><th>devices</th></tr></thead>
            <tbody>
            \(rows)</tbody></table>
            <h2>Routes</h2>
            <ul><li><a href="/metrics">/metrics</a>: Prometheus metrics</li>
            <li><a href="/healthz">/healthz</a>: health</li>
            <li><a href="/v1/stats">/v1/stats</a>: the store's totals, in JSON</li></ul>
            </body></html>

            """
    }

    private func escape(_ text: String) -> String {
        HTMLText.escape(text)
    }

    /// UTC, to the second.
    static func timestamp(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e12 else { return "at an unreadable time" }
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: seconds.rounded(.down)))
    }

    /// "3 h 4 min", "12 min 5 s", "42 s".
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds < 1e12 else { return "a long time" }
        let whole = Int(max(0, seconds).rounded(.down))
        let (hours, minutes, rest) = (whole / 3600, whole / 60 % 60, whole % 60)
        if hours > 0 { return "\(hours) h \(minutes) min" }
        if minutes > 0 { return "\(minutes) min \(rest) s" }
        return "\(rest) s"
    }
}
