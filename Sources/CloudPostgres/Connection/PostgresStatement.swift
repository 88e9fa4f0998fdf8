import PostgresNIO

/// A statement run often enough that PostgreSQL should parse and plan it
/// once per connection rather than at every run: the statements ingest runs
/// for every frame. Run it with `PostgresSession.query(_:_:)`.
///
/// It becomes one of postgres-nio's prepared statements
/// (`PostgresPreparedStatement`), prepared on each connection the first time
/// it runs there, by the name `sightline.` and the type's name: give each
/// conforming type a name unique in the process and of at most 50 bytes
/// (PostgreSQL keeps 63 bytes of a statement's name).
///
/// Every other statement is sent unnamed, parsed and planned with its run, in
/// the same round trip.
public protocol PostgresStatement: Sendable {
    /// The SQL, with parameters `$1`, `$2`, ….
    static var sql: String { get }
    /// The parameters' types, one per parameter, given to PostgreSQL when the
    /// statement is prepared. A bound value must have its parameter's type
    /// (``PostgresValue/dataType``) or be NULL.
    static var parameters: [PostgresDataType] { get }
}

/// A ``PostgresStatement`` with its bound values, as postgres-nio runs it.
struct PreparedStatement<Statement: PostgresStatement>: PostgresPreparedStatement {
    typealias Row = PostgresRow

    static var name: String { "sightline.\(Statement.self)" }
    static var sql: String { Statement.sql }
    static var bindingDataTypes: [PostgresDataType] { Statement.parameters }

    let bindings: PostgresBindings

    /// Binds `values`, refusing before anything is sent a count or a type
    /// that differs from the statement's parameters.
    init(_ values: [PostgresValue]) throws(PostgresFailure) {
        let types = Statement.parameters
        guard values.count == types.count else {
            throw PostgresFailure(
                .binding, "\(Statement.self) has \(types.count) parameters; \(values.count) values were bound")
        }
        var bindings = PostgresBindings(capacity: values.count)
        for (index, value) in values.enumerated() {
            guard value == .null || value.dataType == types[index] else {
                throw PostgresFailure(
                    .binding,
                    "parameter $\(index + 1) of \(Statement.self) is \(PostgresValue.typeName(types[index])), "
                        + "but a \(value.typeName) value was bound")
            }
            try value.bind(into: &bindings, parameter: index)
        }
        self.bindings = bindings
    }

    func makeBindings() throws -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}
