import Foundation
import GRDB
import IndexModel
import IndexQuery

extension QueryFunctions {
    /// Registers the functions compiled queries call on a connection. They are
    /// deterministic, so SQLite may evaluate them once per distinct argument.
    func register(in db: Database) {
        db.add(function: DatabaseFunction(QueryFunctions.textMatch, argumentCount: 2, pure: true) { values in
            guard let value = String.fromDatabaseValue(values[0]) else { return 0 }
            return try self.textMatch(value, literal: try Self.text(values[1])) ? 1 : 0
        })
        db.add(function: DatabaseFunction(QueryFunctions.textCompare, argumentCount: 2, pure: true) { values in
            guard let value = String.fromDatabaseValue(values[0]) else { return nil }
            return try self.textCompare(value, literal: try Self.text(values[1]))
        })
        db.add(function: DatabaseFunction(QueryFunctions.attributeTest, argumentCount: 2, pure: true) { values in
            guard case .blob(let blob) = values[0].storage else { return 0 }
            let attributes = try EventCodec.decodeAttributes([UInt8](blob))
            return try self.attributeTest(attributes, predicate: try Self.text(values[1])) ? 1 : 0
        })
    }

    private static func text(_ value: DatabaseValue) throws -> String {
        guard let text = String.fromDatabaseValue(value) else {
            throw DeviceStoreError(.database, "a query function was called without its operand")
        }
        return text
    }
}
