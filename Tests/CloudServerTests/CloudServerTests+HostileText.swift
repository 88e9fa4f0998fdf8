import CloudCore
@testable import CloudServer
import CloudSQLite
import DeviceStore
import Foundation
import IndexModel
import IndexQuery
import ServerTestSupport
import SyncHTTP
import SyncWire
import Testing

/// What the served routes do with text the rules refuse and queries past
/// their budget: a 4xx that says what is wrong, and nothing changed. In the
/// serialized server suite, as its servers share the process's blocking pool.
extension CloudServerTests {
    private func outcome(_ response: (status: UInt, body: String)) throws -> String {
        guard case .object(let object) = try JSONReader.parse(response.body), case .string(let code)? = object["error"] else {
            return "\(response.status)"
        }
        return "\(response.status) \(code)"
    }

    @Test func namesQueriesAndSearchTextARuleRefusesAreA400AndChangeNothing() async throws {
        let server = try await RunningServer.start(threshold: 1)
        defer { Task { await server.stop() } }
        let app = RunningServer.app
        for name in [#"nul\u0000a"#, #"tab\tname"#, #"esc\u001b[31m"#, #"next\u0085line"#, #"sep\u2028x"#] {
            let enrol = try await server.request("/v1/enrol", body: Array("""
                {"app":"\(app)","device":"\(name)","secret":"\(RunningServer.secret)"}
                """.utf8), timeout: .minutes(10))
            #expect(try outcome(enrol) == "400 invalidOption", "\(name): \(enrol.body)")
            #expect(!enrol.body.contains("\u{1B}"), "the refusal does not echo a control character")
        }
        #expect(try server.cloud.stats().devices == 0)
        #expect(try await outcome(server.request("/v1/apps/\(app)/public?q=a%00b", timeout: .minutes(10))) == "400 malformed")
        #expect(try await outcome(server.request("/v1/apps/\(app)/public?query=title%20%3D%3D%20%22a%00%22", timeout: .minutes(10))) == "400 invalidQuery")
    }

    /// A public search whose query would do more work than the server's
    /// `searchBudget` is 422 `queryTooExpensive`; a cheap one is answered.
    @Test func aSearchPastItsBudgetIsA422() async throws {
        let server = try await RunningServer.start(threshold: 1, configuration: CloudServerConfiguration(port: 0, searchBudget: 1_000))
        defer { Task { await server.stop() } }
        let store = try await server.enrolledDevice(seed: 7)
        try PublicRecipe.engage(store)
        for _ in 0..<3 { _ = try await SyncClient(store: store, transport: HTTPTransport(baseURL: server.url, timeout: .minutes(5))).run() }
        #expect(try server.cloud.publicItemCount() == 1)
        let cheap = try await server.request("/v1/apps/\(RunningServer.app)/public?query=engaged%20%3E%3D%201", timeout: .minutes(10))
        #expect(cheap.status == 200 && cheap.body.contains("Baked Potato Chips"), "\(cheap.body)")
        // A path is not percent-decoded into a name: `app%00x` is another
        // app (none), never the app before the NUL.
        for path in ["/v1/apps/\(RunningServer.app)%00x/public", "/v1/apps/\(RunningServer.app)%0A/public"] {
            let other = try await server.request(path, timeout: .minutes(10))
            #expect(other.status == 200 && other.body == "{\"results\":[]}\n", "\(path): \(other.body)")
        }
        let pattern = (0..<40).map { _ in #"** == "*a*b*c*d*e*f*g*h*z*"cd"# }.joined(separator: " || ")
        let encoded = pattern.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let costly = try await server.request("/v1/apps/\(RunningServer.app)/public?query=\(encoded)", timeout: .minutes(10))
        #expect(try outcome(costly) == "422 queryTooExpensive", "\(costly.body)")
    }

    /// The gate lets `total` searches run at once and `perAddress` from one
    /// address, and every place taken comes back.
    @Test func theSearchGateBoundsSearchesInAllAndPerAddress() {
        let gate = SearchGate(total: 3, perAddress: 2)
        #expect(gate.enter("a") && gate.enter("a"))
        #expect(!gate.enter("a"), "a third from one address")
        #expect(gate.enter("b"))
        #expect(!gate.enter("c"), "a fourth in all")
        gate.leave("a")
        #expect(gate.enter("c") && !gate.enter("a"))
        for address in ["a", "b", "c"] { gate.leave(address) }
        #expect(gate.enter("a") && gate.enter("a") && gate.enter("b"))
    }
}
