/// Where a query's attributes live in a store's table, so that one compiler
/// serves the device's items and the cloud's public items alike.
///
/// Every attribute is in `attributesColumn`, the canonical encoding of the
/// attribute set (`Journal/FORMAT.md`). Some are also plain columns, which SQL
/// compares directly; a column must hold exactly the subject's value of that
/// attribute (or NULL when it has none). Names that are *only* columns, such as
/// an item's identifier, are not attributes and `*` does not look at them.
public struct SQLTarget: Hashable, Sendable {
    /// What a column holds, which decides how the compiler compares it: a
    /// value of another kind than the column's never matches.
    public enum ColumnKind: Hashable, Sendable {
        /// TEXT.
        case text
        /// REAL or INTEGER.
        case number
        /// INTEGER milliseconds since 1970.
        case date
    }

    /// A table column that holds one attribute's value, by its SQL name.
    public struct Column: Hashable, Sendable {
        public var name: String
        public var kind: ColumnKind

        public init(_ name: String, _ kind: ColumnKind) {
            self.name = name
            self.kind = kind
        }
    }

    /// The BLOB column holding the encoded attribute set.
    public var attributesColumn: String
    /// Attribute (or property) name → column.
    public var columns: [String: Column]

    public init(attributesColumn: String, columns: [String: Column]) {
        self.attributesColumn = attributesColumn
        self.columns = columns
    }
}

/// A WHERE condition and its arguments, in order. User text is only ever in
/// `arguments`; `sql` is built from the target's column names, operators and
/// the function names in `QueryFunctions`.
public struct SQLCondition: Sendable {
    /// A value bound to one `?` of `sql`, in the order the placeholders appear.
    public enum Argument: Hashable, Sendable {
        case text(String)
        case integer(Int64)
        case real(Double)
    }

    public var sql: String
    public var arguments: [Argument]
    /// The parts of the query `sql` hands to `sightline_subject_test`, by
    /// the number it binds: the run gives them to `QueryFunctions.spending`.
    public var inMemory: [CompiledQuery]
}
