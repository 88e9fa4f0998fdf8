import CloudCore
import Foundation
import Hummingbird
import IndexModel
import Logging
import SyncWire
import Tracing

extension CloudServer {
    /// A frame is charged to its device only once its signature verified, so
    /// junk naming a victim costs the victim nothing. Frames that do not
    /// authenticate are charged to the client's address, and an address out
    /// of tokens is refused before its next frame is read.
    /// `POST /v1/sync`, in a server span with a child for each step:
    /// `receive` (the body), `verify` (structure, device, signature),
    /// `inflate` (the messages), `ingest` (placement, log, fold, commit and
    /// the signed ack) and `reply`.
    func sync(_ request: Request, context: CloudRequestContext) async -> Response {
        let span = tracer.startAnySpan("POST /v1/sync", context: ServiceContext.current ?? .topLevel, ofKind: .server)
        defer { span.end() }
        let response = await sync(request, context: context, span: span)
        span.attributes["http.response.status_code"] = Int(response.status.code)
        return response
    }

    func sync(_ request: Request, context: CloudRequestContext, span: any Span) async -> Response {
        let address = context.clientAddress
        if addresses.isExhausted(address, now: ContinuousClock.now) {
            metrics.rejected(.rateLimited)
            return addressLimited(context)
        }
        let body: [UInt8]
        do {
            let receive = tracer.startAnySpan("receive", context: span.context)
            defer { receive.end() }
            body = try await collect(request, upTo: configuration.maximumBodyBytes)
            receive.attributes["sightline.frame.bytes"] = body.count
        } catch let error as BodyTimeout {
            _ = addresses.allow(address, now: ContinuousClock.now)
            return error.response
        } catch {
            metrics.rejected(.tooLarge)
            _ = addresses.allow(address, now: ContinuousClock.now)
            return CloudServer.error(.contentTooLarge, "tooLarge",
                                     "a sync body is at most \(configuration.maximumBodyBytes) bytes")
        }
        metrics.received(bytes: body.count)
        let started = ContinuousClock.now
        let ingested: Ingested
        do {
            ingested = try await blocking { [cloud, devices, addresses, metrics, tracer, parent = span.context] () -> Ingested in
                let authentication = CloudServer.step(tracer, "verify", under: parent) { _ in cloud.authenticate(body) }
                switch authentication {
                case .refused(let refusal):
                    _ = addresses.allow(address, now: ContinuousClock.now)
                    return .result(refusal)
                case .authenticated(let frame):
                    guard devices.allow(ProvenDevice(app: frame.app, device: frame.device), now: ContinuousClock.now) else {
                        return .deviceLimited(frame.device)
                    }
                    let inflated = CloudServer.step(tracer, "inflate", under: parent) { step in
                        let opened = Result<OpenedFrame, WireError> { () throws(WireError) in try cloud.open(frame) }
                        if case .success(let opened) = opened {
                            step.attributes["sightline.frame.messages"] = opened.messages.count
                            if opened.recoveredDictionary {
                                step.attributes["sightline.frame.dictionary_recovered"] = true
                                metrics.dictionaryRecovered()
                            }
                        }
                        return opened
                    }
                    switch inflated {
                    case .failure(let error):
                        return .result(.rejecting(error, device: frame.device, frame: frame.frame, key: frame.key))
                    case .success(let opened):
                        return .result(CloudServer.step(tracer, "ingest", under: parent) { _ in cloud.ingest(opened) })
                    }
                }
            }
        } catch {
            return CloudServer.error(.serviceUnavailable, "unavailable", "the server is shutting down")
        }
        return CloudServer.step(tracer, "reply", under: span.context) { step in
            let response = reply(ingested, bytes: body.count, took: ContinuousClock.now - started, context: context)
            span.attributes["sightline.outcome"] = response.outcome
            return response.response
        }
    }

    /// The answer to a frame that was read whole, counted and logged.
    func reply(_ ingested: Ingested, bytes: Int, took: Duration,
                       context: CloudRequestContext) -> (response: Response, outcome: String) {
        let result: IngestResult
        switch ingested {
        case .deviceLimited(let device):
            metrics.rejected(.rateLimited)
            context.logger.notice("rate limited", metadata: ["device": "\(device)"])
            return (CloudServer.error(.tooManyRequests, "rateLimited", "device \(device) sends faster than its rate limit; retry later"),
                    "rateLimited")
        case .result(let ingestResult):
            result = ingestResult
        }
        let device = result.device?.description ?? "-"
        switch result.outcome {
        case .accepted(let count):
            metrics.accepted(frames: 1, messages: count, bytes: bytes)
            metrics.ingested("accepted", in: took)
            context.logger.debug("frame accepted", metadata: ["device": "\(device)", "messages": .stringConvertible(count), "bytes": .stringConvertible(bytes)])
            return (CloudServer.binary(.ok, result.reply), "accepted")
        case .duplicate:
            metrics.duplicate()
            metrics.ingested("duplicate", in: took)
            context.logger.debug("frame acknowledged again", metadata: ["device": "\(device)"])
            return (CloudServer.binary(.ok, result.reply), "duplicate")
        case .rejected(let error):
            metrics.rejected(error.code)
            metrics.ingested("rejected", in: took)
            context.logger.notice("frame refused", metadata: ["device": "\(device)", "reason": "\(error.code.name)"])
            return (CloudServer.json(CloudServer.status(for: error.code), [
                "error": .string(error.code.name),
                "message": .string(error.message),
                "reply": .string(Data(result.reply).base64EncodedString()),
            ]), error.code.name)
        }
    }

    /// Runs `body` in a span of `tracer` named `name` under `parent`, ended when it returns.
    static func step<Value>(_ tracer: any Tracer, _ name: String, under parent: ServiceContext,
                            _ body: (any Span) -> Value) -> Value {
        let span = tracer.startAnySpan(name, context: parent)
        defer { span.end() }
        return body(span)
    }

    enum Ingested: Sendable {
        case result(IngestResult)
        case deviceLimited(DeviceID)
    }
}
