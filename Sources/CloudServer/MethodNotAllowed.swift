import Hummingbird

/// Answers 405 with an `Allow` header to a method a route does not declare
/// (`docs/openapi.yaml`), instead of the router's 404: the path exists, the
/// method does not.
struct MethodNotAllowedMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Each route as its path segments (`*` matches one segment) and the
    /// methods it answers.
    let routes: [(segments: [Substring], methods: [HTTPRequest.Method])]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let segments = request.uri.path.split(separator: "/", omittingEmptySubsequences: true)
        guard let route = routes.first(where: { matches($0.segments, segments) }), !route.methods.contains(request.method) else {
            return try await next(request, context)
        }
        var response = CloudServer.error(.methodNotAllowed, "methodNotAllowed",
                                         "\(request.uri.path) answers \(route.methods.map(\.rawValue).joined(separator: ", ")) only")
        response.headers[.allow] = route.methods.map(\.rawValue).joined(separator: ", ")
        return response
    }

    private func matches(_ pattern: [Substring], _ segments: [Substring]) -> Bool {
        pattern.count == segments.count && zip(pattern, segments).allSatisfy { $0 == "*" || $0 == $1 }
    }
}
