import CloudCore
import Hummingbird
import IndexModel
import IndexQuery
import Logging
import SyncWire

extension CloudServer {
    /// `GET /v1/apps/:app/public`: a public search, within the address's
    /// rate limit, the search gate and the search budget.
    func search(_ request: Request, context: CloudRequestContext) async -> Response {
        let started = ContinuousClock.now
        guard addresses.allow(context.clientAddress, now: ContinuousClock.now) else {
            metrics.searchRefused("rateLimited")
            return addressLimited(context)
        }
        let app: AppID
        switch CloudServer.appName(context) {
        case .success(let named): app = named
        case .failure(let refusal):
            metrics.searchRefused("malformed")
            return refusal.response
        }
        let parameters = request.uri.queryParameters
        guard ["q", "limit", "query", "explain"].allSatisfy({ parameters.getAll($0).count <= 1 }) else {
            metrics.searchRefused("malformed")
            return CloudServer.error(.badRequest, "malformed", "q, limit, query and explain may each be given once")
        }
        let explain: Bool
        switch parameters.get("explain").map({ String($0) }) {
        case nil, "false": explain = false
        case "true": explain = true
        case let other?:
            metrics.searchRefused("malformed")
            return CloudServer.error(.badRequest, "malformed", "explain is true or false, not \"\(other.prefix(64))\"")
        }
        let text = parameters.get("q").map { String($0) } ?? ""
        let limitText = parameters.get("limit").map { String($0) }
        let limit = limitText.map { Int($0) ?? 0 } ?? 20
        guard (1...1000).contains(limit), text.utf8.count <= 1024 else {
            metrics.searchRefused("malformed")
            return CloudServer.error(.badRequest, "malformed", "limit must be an integer from 1 to 1000 and q at most 1024 bytes")
        }
        do {
            try TextRule.text.check(text)
        } catch {
            metrics.searchRefused("malformed")
            return CloudServer.error(.badRequest, "malformed", "q \(error)")
        }
        var filter: CompiledQuery?
        if let query = request.uri.queryParameters.get("query").map({ String($0) }) {
            do throws(QueryError) {
                filter = CompiledQuery(try QueryParser.parse(query), now: cloud.now)
            } catch {
                metrics.searchRefused("invalidQuery")
                return CloudServer.error(.badRequest, "invalidQuery", error.rendered(query: query))
            }
        }
        let address = context.clientAddress
        guard searches.enter(address) else {
            metrics.searchRefused("busy")
            return CloudServer.error(.tooManyRequests, "busy", """
                as many searches as the server runs at once are running (from this address, or in all); retry later
                """)
        }
        defer { searches.leave(address) }
        let budget = QueryBudget(units: configuration.searchBudget, deadline: .now + configuration.searchTimeout)
        do {
            let results = try await blocking { [filter] in
                try cloud.search(app: app, text: text, filter: filter, limit: limit, explain: explain, budget: budget)
                    .map(\.jsonValue)
            }
            metrics.searched(in: ContinuousClock.now - started)
            return CloudServer.json(.ok, ["results": .array(results)])
        } catch let error as CloudError where error.code == .queryTooExpensive {
            metrics.searchRefused("queryTooExpensive")
            return CloudServer.error(.unprocessableContent, "queryTooExpensive", error.message)
        } catch {
            metrics.searchRefused("unavailable")
            context.logger.error("search failed", metadata: ["error": "\(error)"])
            return CloudServer.error(.serviceUnavailable, "unavailable", "the cloud store cannot be read: \(error)")
        }
    }

    /// `GET /v1/apps/:app/items/:hash`: one public item.
    func item(context: CloudRequestContext) async -> Response {
        guard addresses.allow(context.clientAddress, now: ContinuousClock.now) else { return addressLimited(context) }
        let app: AppID
        switch CloudServer.appName(context) {
        case .success(let named): app = named
        case .failure(let refusal): return refusal.response
        }
        guard let hex = context.parameters.get("hash"), let hash = PublicHash(hex: hex) else {
            return CloudServer.error(.badRequest, "malformed", "the item is named by its 64-digit public hash")
        }
        do {
            guard let entry = try await blocking({ try cloud.publicEntry(app: app, hash: hash) }) else {
                return CloudServer.error(.notFound, "notFound", "no public item with this hash")
            }
            return CloudServer.json(.ok, entry.jsonValue)
        } catch {
            return CloudServer.error(.serviceUnavailable, "unavailable", "the cloud store cannot be read: \(error)")
        }
    }
}
