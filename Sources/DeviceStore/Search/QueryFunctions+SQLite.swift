import Foundation
import GRDB
import IndexModel
import IndexQuery

extension QueryFunctions {
    /// Registers the functions compiled queries call on a connection, over
    /// the rows of `target`. The first three are deterministic, so SQLite may
    /// evaluate them once per distinct argument; `sightline_subject_test`
    /// reads the part of the run it is given, so it is not.
    func register(in db: Database, target: SQLTarget) {
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
            try self.chargeDecoding(bytes: blob.count)
            let attributes = try EventCodec.decodeAttributes([UInt8](blob))
            return try self.attributeTest(attributes, predicate: try Self.text(values[1])) ? 1 : 0
        })
        let columns = target.columns.keys.sorted().compactMap { name in target.columns[name].map { (name, $0.kind) } }
        db.add(function: DatabaseFunction(QueryFunctions.subjectTest, argumentCount: columns.count + 2, pure: false) { values in
            let attributes: AttributeSet
            if case .blob(let blob) = values[0].storage {
                try self.chargeDecoding(bytes: blob.count)
                attributes = try EventCodec.decodeAttributes([UInt8](blob))
            } else {
                attributes = AttributeSet()
            }
            var named: [String: AttributeValue] = [:]
            for (offset, (name, kind)) in columns.enumerated() {
                if let value = Self.attributeValue(values[offset + 1], kind) { named[name] = value }
            }
            guard let part = Int64.fromDatabaseValue(values[columns.count + 1]) else {
                throw DeviceStoreError(.database, "a query function was called without its part")
            }
            return try self.subjectTest(attributes, columns: named, part: part) ? 1 : 0
        })
    }

    /// A column's value as the attribute it stands for; nil for NULL.
    private static func attributeValue(_ value: DatabaseValue, _ kind: SQLTarget.ColumnKind) -> AttributeValue? {
        switch (kind, value.storage) {
        case (.text, .string(let text)): .string(text)
        case (.number, .int64(let integer)): .number(Double(integer))
        case (.number, .double(let double)): .number(double)
        case (.date, .int64(let milliseconds)): .date(Timestamp(millisecondsSince1970: milliseconds))
        default: nil
        }
    }

    private static func text(_ value: DatabaseValue) throws -> String {
        guard let text = String.fromDatabaseValue(value) else {
            throw DeviceStoreError(.database, "a query function was called without its operand")
        }
        return text
    }
}
