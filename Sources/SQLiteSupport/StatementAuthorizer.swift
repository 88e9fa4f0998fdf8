import GRDB
import GRDBSQLite

extension Database {
    /// Takes GRDB's statement authorizer off this connection, so that SQLite
    /// compiles its statements without calling back for every table and
    /// column they name. GRDB sets one on every connection it opens and
    /// learns from it, for each statement it compiles, the tables and
    /// columns read (for `ValueObservation` and region observation), the
    /// writes (for transaction observers), whether it changes the schema
    /// (to clear its schema cache) and its BEGIN, COMMIT and SAVEPOINT
    /// effects (for transaction observers and for a cancelled async access).
    /// Making those regions, a few sets of strings a column, costs about a
    /// tenth of a simulation's time, most of it while woken stores compile
    /// their statements again.
    ///
    /// A connection without it must use none of those: no observation, no
    /// transaction observers, savepoints or `afterNextTransaction`, no async
    /// access that may be cancelled, and no GRDB schema introspection after
    /// a schema change on it (``SchemaLookup`` asks SQLite itself). Call it
    /// from `Configuration.prepareDatabase`, before the connection compiles
    /// a statement of its own: taking an authorizer off expires every
    /// statement the connection has prepared.
    public func dropStatementAuthorizer() {
        sqlite3_set_authorizer(sqliteConnection, nil, nil)
    }
}
