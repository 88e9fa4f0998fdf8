import Hummingbird
import Logging

/// One line at info level for every request a listener answers, and the
/// request's count and time in `/metrics`
/// (`sightline_http_requests_total`, `sightline_http_request_duration_seconds`).
///
/// The line's message is `request`; its metadata: `listener`, `method`,
/// `route` (the matched route's pattern, such as `/v1/apps/{app}/public`,
/// or `unmatched`), `status`, `bytes` (the response body's, when known),
/// `requestBytes` (the request's `content-length`, when sent), `durationMs`
/// and the client's `address`; the request's id comes with the logger
/// (`request` in `--log-format json`). Numbers are numbers. The path itself
/// is never logged: a search's text is in its query string.
///
/// It is the outermost middleware, so it sees what every other one
/// answered; an error nothing turned into a response is logged as the 500
/// Hummingbird answers with, and passed on.
struct AccessLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let listener: String
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        do {
            let response = try await next(request, context)
            log(request, context: context, status: Int(response.status.code), bytes: response.body.contentLength, since: started)
            return response
        } catch let error as any HTTPResponseError {
            log(request, context: context, status: Int(error.status.code), bytes: nil, since: started)
            throw error
        } catch {
            log(request, context: context, status: 500, bytes: nil, since: started)
            throw error
        }
    }

    private func log(_ request: Request, context: Context, status: Int, bytes: Int?, since started: ContinuousClock.Instant) {
        let took = ContinuousClock.now - started
        let route = context.endpointPath.flatMap { $0 == "NotFound" ? nil : $0 } ?? ServerMetrics.unmatchedRoute
        metrics.answered(listener: listener, route: route, status: status, in: took)
        var metadata: Logger.Metadata = [
            "listener": .string(listener),
            "method": .string(request.method.rawValue),
            "route": .string(route),
            "status": .stringConvertible(status),
            "durationMs": .stringConvertible((took.seconds * 1_000_000).rounded() / 1000),
        ]
        if let bytes { metadata["bytes"] = .stringConvertible(bytes) }
        if let sent = request.headers[.contentLength].flatMap({ Int($0) }) { metadata["requestBytes"] = .stringConvertible(sent) }
        if let address = (context as? any RemoteAddressRequestContext)?.remoteAddress?.ipAddress {
            metadata["address"] = .string(address)
        }
        context.logger.info("request", metadata: metadata)
    }
}

extension Duration {
    /// The duration in seconds, as a floating-point number.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
