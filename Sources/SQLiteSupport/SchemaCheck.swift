import GRDB

/// One entry of `sqlite_master`: a table, index, view or trigger.
public struct SchemaObject: Hashable, Sendable {
    /// `table`, `index`, `view` or `trigger`.
    public let type: String
    /// The object's name.
    public let name: String
    /// The table the object belongs to (a table's own name).
    public let table: String
    /// The statement that created the object; nil for the indexes SQLite
    /// makes for a table's own constraints.
    public let sql: String?
}

/// The schema check a restore runs before it opens the restored file as a
/// store: the file is outside bytes, and a trigger, a view, an extra table or
/// a changed table definition in it would run inside the restored store (a
/// trigger on the cloud log could rewrite counts at every ingest). Only what
/// this build creates is allowed.
public enum SchemaCheck {
    /// The schema of a new store: what `create` makes in an empty database.
    public static func schema(of create: (Database) throws -> Void) throws -> [SchemaObject] {
        let queue = try DatabaseQueue()
        try queue.write(create)
        return try queue.read(objects)
    }

    /// Reads the database at `path` without writing to it.
    public static func read<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read(body)
    }

    /// A restored file's schema and its `format_version` in `metaTable`
    /// (nil when there is no such table or the value is not an integer).
    public static func inspect(_ path: String, metaTable: String) throws -> (objects: [SchemaObject], version: Int64?) {
        try read(path) { db in
            let objects = try objects(db)
            guard objects.contains(where: { $0.name == metaTable && $0.type == "table" }) else { return (objects, nil) }
            let value = try DatabaseValue.fetchOne(db, sql: "SELECT value FROM \(metaTable) WHERE key = 'format_version'")
            guard case .int64(let version)? = value?.storage else { return (objects, nil) }
            return (objects, version)
        }
    }

    /// Every object in `sqlite_master`, read with checks (a hostile file may
    /// hold anything in it).
    public static func objects(_ db: Database) throws -> [SchemaObject] {
        var objects: [SchemaObject] = []
        for row in try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master") {
            func text(_ index: Int) -> String? {
                if case .string(let value) = (row[index] as DatabaseValue).storage { return value }
                return nil
            }
            guard let type = text(0), let name = text(1), let table = text(2) else {
                throw SchemaCheckError("sqlite_master holds an entry whose type, name or table is not text")
            }
            let sql: String?
            switch (row[3] as DatabaseValue).storage {
            case .null: sql = nil
            case .string(let value): sql = value
            default: throw SchemaCheckError("the SQL of \(name) in sqlite_master is not text")
            }
            objects.append(SchemaObject(type: type, name: name, table: table, sql: sql))
        }
        return objects
    }

    /// What a restore does with a restored file's schema.
    public enum Verdict: Equatable, Sendable {
        /// Every object is one this build makes, as it makes it.
        case accepted
        /// As `accepted`, except derived tables (an index the store rebuilds
        /// when it lacks it) of another definition: drop them, and the store
        /// builds them again.
        case acceptedDroppingDerived([String])
        case refused(String)
    }

    /// `found` (a restored file's schema) measured against `expected` (a new
    /// store's, of the current format version).
    ///
    /// - No view or trigger; every table and index is one `expected` has, or
    ///   one `isHistoric` allows (tables an older version had and a migration
    ///   drops).
    /// - Each table's column definitions (whitespace and case aside, in any
    ///   order, since migrations append columns) are the expected ones, or for
    ///   an older version (`isCurrentVersion` false) some of them; no other
    ///   clause (a CHECK, a foreign key) may be added.
    /// - Each index is defined as expected.
    /// - Tables named in `derived` (and their indexes) may be missing, and
    ///   when one is defined otherwise or is one this build no longer makes
    ///   (an older build's layout) they are all to be dropped.
    public static func verdict(found: [SchemaObject], expected: [SchemaObject], isCurrentVersion: Bool,
                               derived: Set<String> = [], isHistoric: (SchemaObject) -> Bool = { _ in false }) -> Verdict {
        let wanted = Dictionary(expected.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var derivedDiffers = false
        for object in found {
            guard object.type == "table" || object.type == "index" else {
                return .refused("the restored file holds a \(object.type) \(object.name), which no store of this build has")
            }
            guard let model = wanted[object.name], model.type == object.type, model.table == object.table else {
                if isHistoric(object) { continue }
                // A derived table this build no longer makes (or an index on one) is dropped with the others.
                if object.type == "table" ? derived.contains(object.name) : derived.contains(object.table) {
                    derivedDiffers = true
                    continue
                }
                return .refused("the restored file holds a \(object.type) \(object.name) that no store of this build has")
            }
            if let difference = difference(object, model, isCurrentVersion: isCurrentVersion) {
                guard derived.contains(object.name) || derived.contains(object.table) else { return .refused(difference) }
                derivedDiffers = true
            }
        }
        let present = Set(found.map(\.name))
        if isCurrentVersion, let missing = expected.first(where: { !present.contains($0.name) && !derived.contains($0.table) }) {
            return .refused("the restored file lacks the \(missing.type) \(missing.name)")
        }
        guard derivedDiffers else { return .accepted }
        return .acceptedDroppingDerived(found.filter { $0.type == "table" && derived.contains($0.name) }.map(\.name).sorted())
    }

    /// How `object` differs from `model`, said for a refusal, or nil.
    private static func difference(_ object: SchemaObject, _ model: SchemaObject, isCurrentVersion: Bool) -> String? {
        if object.type == "index" {
            guard object.sql.map(normalized) == model.sql.map(normalized) else {
                return "the restored file's index \(object.name) is not defined as this build defines it"
            }
            return nil
        }
        guard let sql = object.sql, let modelSQL = model.sql,
              let definitions = columnDefinitions(sql), let modelDefinitions = columnDefinitions(modelSQL) else {
            return "the restored file's table \(object.name) has a definition this build cannot read"
        }
        let fits = isCurrentVersion ? definitions == modelDefinitions : definitions.isSubset(of: modelDefinitions)
        guard fits else {
            let extra = definitions.subtracting(modelDefinitions).sorted()
            return "the restored file's table \(object.name) is not defined as this build defines it"
                + (extra.isEmpty ? " (columns are missing)" : ": \(extra.joined(separator: "; "))")
        }
        return nil
    }

    private static func normalized(_ sql: String) -> String {
        String(sql.lowercased().filter { !$0.isWhitespace })
    }

    /// The comma-separated definitions inside a CREATE TABLE's outer
    /// parentheses, normalized, or nil when there are none.
    static func columnDefinitions(_ sql: String) -> Set<String>? {
        let text = normalized(sql)
        guard let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")"), open < close else { return nil }
        var definitions: Set<String> = []
        var depth = 0
        var current = ""
        for character in text[text.index(after: open)..<close] {
            switch character {
            case "(": depth += 1
            case ")": depth -= 1
            case "," where depth == 0:
                definitions.insert(current)
                current = ""
                continue
            default: break
            }
            current.append(character)
        }
        definitions.insert(current)
        // What follows the parentheses (WITHOUT ROWID, STRICT) is part of the definition too.
        definitions.insert("after:" + text[text.index(after: close)...])
        return definitions
    }
}

/// A `sqlite_master` entry that `SchemaCheck` cannot read as text, so the
/// restored file's schema cannot be compared and the file is refused.
public struct SchemaCheckError: Error, CustomStringConvertible {
    /// What could not be read, and where.
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
