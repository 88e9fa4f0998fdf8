import IndexModel
import PropertyBased
import Testing
import TextTestSupport

/// Every string field of every operation, pushed with hostile strings: the
/// line parses and keeps the string exactly when the field's rule admits it
/// (`TextRule`), and is refused naming that field when it does not.
@Suite struct OperationTextTests {
    /// One string field of one operation: the line with `text` in it, the
    /// rule the field follows, the path an error names, and how to read
    /// the field back from the parsed operation.
    struct Field: Sendable {
        let name: String
        let rule: TextRule
        let line: @Sendable (String) -> String
        let path: @Sendable (String) -> String
        let read: @Sendable (AppOperation) -> String?
    }

    static func json(_ text: String) -> String { JSONWriter.compact(.string(text)) }

    static func item(_ operation: AppOperation) -> SearchableItem? {
        if case .index(_, let items) = operation { return items.first }
        return nil
    }

    static func activity(_ operation: AppOperation) -> UserActivity? {
        if case .activity(let activity) = operation { return activity }
        return nil
    }

    static let fields: [Field] = [
        Field(name: "index", rule: .identifier, line: { #"{"op":"index","index":\#(json($0)),"items":[{"id":"1"}]}"# },
              path: { _ in "index" }, read: { if case .index(let index, _) = $0 { index } else { nil } }),
        Field(name: "item id", rule: .identifier, line: { #"{"op":"index","index":"i","items":[{"id":\#(json($0))}]}"# },
              path: { _ in "items[0].id" }, read: { item($0)?.uniqueIdentifier }),
        Field(name: "item domain", rule: .identifier,
              line: { #"{"op":"index","index":"i","items":[{"id":"1","domain":\#(json($0))}]}"# },
              path: { _ in "items[0].domain" }, read: { item($0)?.domainIdentifier }),
        Field(name: "item title", rule: .text, line: { #"{"op":"index","index":"i","items":[{"id":"1","title":\#(json($0))}]}"# },
              path: { _ in "items[0].title" }, read: { item($0)?.attributes.title }),
        Field(name: "item keyword", rule: .text,
              line: { #"{"op":"index","index":"i","items":[{"id":"1","keywords":["k",\#(json($0))]}]}"# },
              path: { _ in "items[0].keywords[1]" }, read: { item($0)?.attributes.keywords?.last }),
        Field(name: "custom attribute name", rule: .identifier,
              line: { #"{"op":"index","index":"i","items":[{"id":"1","attributes":{\#(json("x" + $0)):"v"}}]}"# },
              path: { "items[0].attributes." + TextRule.printable("x" + $0) },
              read: { item($0)?.attributes.entries.first { $0.key.isCustom }.map { String($0.key.name.dropFirst()) } }),
        Field(name: "custom attribute value", rule: .text,
              line: { #"{"op":"index","index":"i","items":[{"id":"1","attributes":{"mood":\#(json($0))}}]}"# },
              path: { _ in "items[0].attributes.mood" },
              read: { if case .string(let text)? = item($0)?.attributes[.custom("mood")] { text } else { nil } }),
        Field(name: "deleted id", rule: .identifier, line: { #"{"op":"delete","index":"i","ids":["first-id",\#(json($0))]}"# },
              path: { _ in "ids[1]" }, read: { if case .delete(_, let ids) = $0 { ids.last } else { nil } }),
        Field(name: "deleted domain", rule: .identifier, line: { #"{"op":"deleteDomains","index":"i","domains":[\#(json($0))]}"# },
              path: { _ in "domains[0]" }, read: { if case .deleteDomains(_, let domains) = $0 { domains.first } else { nil } }),
        Field(name: "activity type", rule: .identifier, line: { #"{"op":"activity","type":\#(json($0))}"# },
              path: { _ in "type" }, read: { activity($0)?.activityType }),
        Field(name: "activity title", rule: .text, line: { #"{"op":"activity","type":"t","title":\#(json($0))}"# },
              path: { _ in "title" }, read: { activity($0)?.title }),
        Field(name: "activity keyword", rule: .text, line: { #"{"op":"activity","type":"t","keywords":[\#(json($0))]}"# },
              path: { _ in "keywords[0]" }, read: { activity($0)?.keywords.first }),
        Field(name: "activity url", rule: .url, line: { #"{"op":"activity","type":"t","url":\#(json($0))}"# },
              path: { _ in "url" }, read: { activity($0)?.webpageURL }),
        Field(name: "userInfo key", rule: .identifier,
              line: { #"{"op":"activity","type":"t","userInfo":{\#(json("k" + $0)):"v"}}"# },
              path: { _ in "userInfo" }, read: { activity($0)?.userInfo.keys.first.map { String($0.dropFirst()) } }),
        Field(name: "userInfo value", rule: .text, line: { #"{"op":"activity","type":"t","userInfo":{"k":\#(json($0))}}"# },
              path: { _ in "userInfo.k" }, read: { activity($0)?.userInfo["k"] }),
        Field(name: "related", rule: .identifier, line: { #"{"op":"activity","type":"t","related":\#(json($0))}"# },
              path: { _ in "related" }, read: { activity($0)?.relatedUniqueIdentifier }),
        Field(name: "weakly related", rule: .identifier, line: { #"{"op":"activity","type":"t","weakRelated":\#(json($0))}"# },
              path: { _ in "weakRelated" }, read: { activity($0)?.weakRelatedUniqueIdentifier }),
        Field(name: "activity domain", rule: .identifier, line: { #"{"op":"activity","type":"t","domain":\#(json($0))}"# },
              path: { _ in "domain" }, read: { activity($0)?.domainIdentifier }),
        Field(name: "activity id", rule: .identifier, line: { #"{"op":"activity","type":"t","id":\#(json($0))}"# },
              path: { _ in "id" }, read: { activity($0)?.persistentIdentifier }),
        Field(name: "shown ref", rule: .identifier, line: { #"{"op":"shown","ref":\#(json($0))}"# },
              path: { _ in "ref" }, read: { if case .shown(let ref) = $0 { ref } else { nil } }),
        Field(name: "engaged ref", rule: .identifier, line: { #"{"op":"engage","ref":\#(json($0))}"# },
              path: { _ in "ref" }, read: { if case .engage(let ref) = $0 { ref } else { nil } }),
        Field(name: "deleted activity id", rule: .identifier, line: { #"{"op":"deleteActivities","ids":[\#(json($0))]}"# },
              path: { _ in "ids[0]" }, read: { if case .deleteActivities(let ids) = $0 { ids.first } else { nil } }),
    ]

    /// The field's text as the line puts it: a key or a name is prefixed
    /// so that it is never empty or a standard attribute's name.
    static func stored(_ text: String, in field: Field) -> String {
        ["custom attribute name", "userInfo key"].contains(field.name) ? "x" + text : text
    }

    @Test(arguments: fields.map(\.name))
    func aHostileStringIsKeptExactlyOrRefusedNamingItsField(name: String) async throws {
        let field = try #require(Self.fields.first { $0.name == name })
        await propertyCheck(count: 400, input: HostileText.string) { text in
            let admitted = field.rule.admits(Self.stored(text, in: field))
            do throws(OperationError) {
                let operation = try OperationParser.parse(line: field.line(text))
                #expect(admitted, "\(name): \(String(reflecting: text)) was taken")
                #expect(field.read(operation) == text, "\(name): \(String(reflecting: text)) came back otherwise")
            } catch {
                #expect(!admitted, "\(name): \(String(reflecting: text)) was refused: \(error)")
                #expect(error.path == field.path(text), "\(name): \(error)")
                #expect(HostileText.isLine(error.description), "\(name): the error shows the text as it is: \(error)")
            }
        }
    }
}
