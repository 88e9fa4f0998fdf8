import ArgumentParser
import Foundation
import Hummingbird
import IndexModel
import Inspect
import Logging
import NIOCore
import NIOPosix

struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Serve a run's folder as pages in a browser: the run, its timeline, the fleet, each device, the cloud, and traces.",
        discussion: """
            Reads run.json and report.json once and the stores when a page needs them, read-only, and serves on \
            127.0.0.1 until interrupted. Prints the URL to open. Pages: / (the verdict, findings first, a zoomable \
            timeline of every fault, backup and cloud incarnation, the options), /fleet (every device, sortable and \
            filterable), /devices/N (its journal, outbox and what the cloud acknowledged), /cloud (log rows, public \
            index growth, popularity) and /trace?q=TARGET (what `sightline trace` shows, from the search box).

            Example:
              sightline simulate --seed 1 --devices 20 --faults heavy --out run
              sightline inspect run
            """
    )

    @Argument(help: ArgumentHelp("A run's folder (simulate or drill restore --out).", valueName: "run-dir"))
    var folder: String

    @Option(name: .long, help: "The address to listen on; keep it on loopback: the pages show every store of the run.")
    var host = "127.0.0.1"

    @Option(name: .long, help: "The port (0: any free one).")
    var port = 0

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
    }

    func run() async throws {
        let run: InspectedRun
        do {
            run = try InspectedRun(folder: folder)
        } catch {
            Output.error("error: \(error)")
            throw ExitStatus.storeUnavailable
        }
        var logger = Logger(label: "sightline.inspect")
        logger.logLevel = .warning
        let host = self.host
        let application = Application(router: InspectServer(run: run).router(),
                                      configuration: .init(address: .hostname(host, port: port), serverName: "sightline-inspect"),
                                      onServerRunning: { channel in
                                          Output.error("inspecting \(run.folder) on http://\(host):\(channel.localAddress?.port ?? 0)")
                                      },
                                      logger: logger)
        try await application.runService()
    }
}

/// The inspector's routes over one run.
struct InspectServer: Sendable {
    let run: InspectedRun

    func router() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.get("/") { _, _ in html(InspectPages.run(run)) }
        router.get("fleet") { _, _ in html(InspectPages.fleet(run)) }
        router.get("devices/:number") { _, context in
            let text = context.parameters.get("number") ?? ""
            guard let device = Int(text).flatMap({ number in run.manifest.devices.first { $0.number == number } }) else {
                return notFound("the run has no device \(text): its devices are 0…\(max(run.manifest.devices.count - 1, 0))")
            }
            return await page { try InspectPages.device(run, device) }
        }
        router.get("cloud") { _, _ in await page { try InspectPages.cloud(run) } }
        router.get("trace") { request, _ in
            let query = request.uri.queryParameters["q"].map(String.init) ?? ""
            return await page { trace(query) }
        }
        router.get("api/timeline") { _, _ in json(run.timelineJSON) }
        router.get("api/fleet") { _, _ in json(.object(["devices": .array(run.deviceFigures.map(JSONValue.object))])) }
        router.get("assets/inspector.css") { _, _ in asset(InspectAssets.css, type: "text/css; charset=utf-8") }
        router.get("assets/inspector.js") { _, _ in asset(InspectAssets.js, type: "text/javascript; charset=utf-8") }
        return router
    }

    /// The trace page for `query`: only the stores the target needs are
    /// opened (a device's own for `device:N`, every device's otherwise).
    func trace(_ query: String) -> String {
        guard !query.isEmpty else { return InspectPages.trace(query: query, nil, error: nil) }
        let target: TraceTarget
        do {
            target = try TraceTarget(parsing: query)
        } catch {
            return InspectPages.trace(query: query, nil, error: error.description)
        }
        var chosen = run.manifest.devices
        if case .device(let selector) = target {
            guard let device = run.manifest.device(selector) else {
                return InspectPages.trace(query: query, nil, error: "the run has no device \(TextRule.printable(selector))")
            }
            chosen = [device]
        }
        var devices: [TraceDevice] = []
        for device in chosen {
            guard let store = try? run.deviceStore(device) else { continue }
            devices.append(TraceDevice(label: "device \(device.number)", store: store))
        }
        let trace = Tracer(devices: devices, cloud: try? run.cloud()).trace(target)
        return InspectPages.trace(query: query, trace, error: nil)
    }

    /// A page made on NIO's blocking pool (it reads stores), or a 500 that says why not.
    func page(_ make: @escaping @Sendable () throws -> String) async -> Response {
        do {
            return html(try await NIOThreadPool.singleton.runIfActive(make))
        } catch {
            var response = html(InspectPages.layout("Cannot be shown", section: .run,
                                                    "<h1>Cannot be shown</h1><p class=\"fail\">\(InspectPages.escape("\(error)"))</p>"))
            response.status = .internalServerError
            return response
        }
    }

    func html(_ text: String) -> Response {
        asset(text, type: "text/html; charset=utf-8")
    }

    func notFound(_ message: String) -> Response {
        var response = html(InspectPages.layout("Not found", section: .run, "<h1>Not found</h1><p>\(InspectPages.escape(message))</p>"))
        response.status = .notFound
        return response
    }

    func json(_ value: JSONValue) -> Response {
        asset(JSONWriter.compact(value), type: "application/json")
    }

    func asset(_ text: String, type: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
