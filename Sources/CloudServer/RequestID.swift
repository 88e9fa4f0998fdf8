import Hummingbird
import HummingbirdCore

/// The response header that names the request (a valid field name, so never nil).
let requestIDHeader = HTTPFields.Element.Name("x-request-id")

/// Names every response with its request's id in `x-request-id`: the id
/// every log line of that request carries (`hb.request.id`, and `request`
/// in `--log-format json`), so that a client's report and the server's
/// logs meet on it. A route's error response is named too.
struct RequestIDMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        if let requestIDHeader { response.headers[requestIDHeader] = context.id }
        return response
    }
}
