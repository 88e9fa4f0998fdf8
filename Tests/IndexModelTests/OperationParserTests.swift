import IndexModel
import Testing

private func expectError(_ line: String, path: String, _ message: String? = nil,
                         sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        let operation = try OperationParser.parse(line: line)
        Issue.record("parsed \(operation.name) from a line that should fail at \(path)", sourceLocation: sourceLocation)
    } catch {
        #expect(error.path == path, "\(error)", sourceLocation: sourceLocation)
        if let message {
            #expect(error.message == message, "\(error)", sourceLocation: sourceLocation)
        }
    }
}

private let january2027 = Timestamp(millisecondsSince1970: 1_798_761_600_000)

// MARK: - The examples of DESIGN.md

@Test func indexExampleParses() throws {
    let line = #"{"op":"index","index":"photos","items":[{"id":"1","domain":"album-1","title":"Haleakala Sunrise","# +
        #""description":"May 12, 2015 Maui, Hawaii","keywords":["maui","sunrise"],"contentURL":"https://example.com/p/1","# +
        #""expires":"2027-01-01T00:00:00Z"}]}"#
    var attributes = AttributeSet()
    attributes.title = "Haleakala Sunrise"
    attributes.contentDescription = "May 12, 2015 Maui, Hawaii"
    attributes.keywords = ["maui", "sunrise"]
    attributes.contentURL = "https://example.com/p/1"
    let item = SearchableItem(uniqueIdentifier: "1", domainIdentifier: "album-1", attributes: attributes,
                              expirationDate: january2027)
    #expect(try OperationParser.parse(line: line) == .index(index: "photos", items: [item]))
}

@Test func updateExampleParses() throws {
    let line = #"{"op":"update","index":"photos","items":[{"id":"1","title":"Haleakala at dawn"}]}"#
    var changes = AttributeChanges()
    changes[.title] = .some(.string("Haleakala at dawn"))
    let update = ItemUpdate(uniqueIdentifier: "1", attributes: changes)
    #expect(try OperationParser.parse(line: line) == .update(index: "photos", updates: [update]))
}

@Test func updateNullClearsAndAbsentKeeps() throws {
    let line = #"{"op":"update","index":"p","items":[{"id":"1","domain":null,"expires":"2027-01-01T00:00:00Z","# +
        #""title":null,"rating":4,"attributes":{"note":null,"iso":200}}]}"#
    guard case .update(_, let updates) = try OperationParser.parse(line: line), let update = updates.first else {
        Issue.record("expected an update")
        return
    }
    #expect(update.domainIdentifier == .clear)
    #expect(update.expirationDate == .set(january2027))
    #expect(update.attributes[.title] == .some(nil), "null clears")
    #expect(update.attributes[.custom("note")] == .some(nil), "null clears a custom attribute too")
    #expect(update.attributes[.rating] == .some(.number(4)))
    #expect(update.attributes[.custom("iso")] == .some(.number(200)))
    #expect(update.attributes[.contentDescription] == nil, "absent keeps")
    #expect(update.attributes.entries.count == 4)

    // The merge follows: cleared fields go, set fields change, the rest stay.
    var before = SearchableItem(uniqueIdentifier: "1", domainIdentifier: "d")
    before.attributes.title = "old"
    before.attributes.contentDescription = "kept"
    before.attributes[.custom("note")] = .string("n")
    let after = before.applying(update)
    #expect(after.domainIdentifier == nil)
    #expect(after.expirationDate == january2027)
    #expect(after.attributes.title == nil)
    #expect(after.attributes.contentDescription == "kept")
    #expect(after.attributes[.custom("note")] == nil)
    #expect(after.attributes[.rating] == .number(4))

    let keepAll = try OperationParser.parse(line: #"{"op":"update","index":"p","items":[{"id":"1"}]}"#)
    #expect(keepAll == .update(index: "p", updates: [ItemUpdate(uniqueIdentifier: "1")]))
}

@Test func deleteExamplesParse() throws {
    #expect(try OperationParser.parse(line: #"{"op":"delete","index":"photos","ids":["1","4"]}"#)
        == .delete(index: "photos", identifiers: ["1", "4"]))
    #expect(try OperationParser.parse(line: #"{"op":"deleteDomains","index":"photos","domains":["album-1"]}"#)
        == .deleteDomains(index: "photos", domains: ["album-1"]))
    #expect(try OperationParser.parse(line: #"{"op":"deleteAll","index":"photos"}"#) == .deleteAll(index: "photos"))
}

@Test func batchExampleParses() throws {
    let line = #"{"op":"batch","index":"photos","clientState":"AQID","expectedClientState":"AAE=","ops":["# +
        #"{"op":"index","items":[{"id":"1","title":"t"}]},{"op":"delete","index":"photos","ids":["2"]},"# +
        #"{"op":"deleteAll"}]}"#
    var item = SearchableItem(uniqueIdentifier: "1")
    item.attributes.title = "t"
    let expected = IndexBatch(
        index: "photos",
        operations: [
            .index(index: "photos", items: [item]),
            .delete(index: "photos", identifiers: ["2"]),
            .deleteAll(index: "photos"),
        ],
        clientState: [1, 2, 3],
        condition: .expecting([0, 1]))
    #expect(try OperationParser.parse(line: line) == .batch(expected))

    let unconditional = try OperationParser.parse(line: #"{"op":"batch","index":"p","clientState":"","ops":[]}"#)
    #expect(unconditional == .batch(IndexBatch(index: "p", operations: [], clientState: [])))
    let expectingNone = try OperationParser.parse(
        line: #"{"op":"batch","index":"p","clientState":"AA==","expectedClientState":null,"ops":[]}"#)
    #expect(expectingNone == .batch(IndexBatch(index: "p", operations: [], clientState: [0], condition: .expecting(nil))))
}

@Test func activityExampleParses() throws {
    let line = #"{"op":"activity","type":"com.yummly/browseRecipe","title":"Baked Potato Chips","keywords":["potato"],"# +
        #""url":"https://www.yummly.com/recipe/BPC-983195","userInfo":{"id":"BPC-983195"},"# +
        #""searchable":true,"public":true,"handoff":false,"related":"1","weakRelated":null,"domain":"recipes","# +
        #""expires":null}"#
    let expected = UserActivity(
        activityType: "com.yummly/browseRecipe", title: "Baked Potato Chips", keywords: ["potato"],
        userInfo: ["id": "BPC-983195"], webpageURL: "https://www.yummly.com/recipe/BPC-983195",
        eligibleForSearch: true, eligibleForHandoff: false, eligibleForPublicIndexing: true,
        relatedUniqueIdentifier: "1", domainIdentifier: "recipes")
    #expect(try OperationParser.parse(line: line) == .activity(expected))
}

@Test func activityDefaultsAreThoseOfTheAPI() throws {
    let parsed = try OperationParser.parse(line: #"{"op":"activity","type":"t"}"#)
    #expect(parsed == .activity(UserActivity(activityType: "t")))
    guard case .activity(let activity) = parsed else { return }
    #expect(!activity.eligibleForSearch && !activity.eligibleForHandoff && !activity.eligibleForPublicIndexing)
}

@Test func engagementAndClockExamplesParse() throws {
    #expect(try OperationParser.parse(line: #"{"op":"shown","ref":"1"}"#) == .shown(ref: "1"))
    #expect(try OperationParser.parse(line: #"{"op":"engage","ref":"1"}"#) == .engage(ref: "1"))
    #expect(try OperationParser.parse(line: #"{"op":"advanceClock","to":"2027-01-02T00:00:00Z"}"#)
        == .advanceClock(to: january2027.adding(milliseconds: 86_400_000)))
}

@Test func activityDeletionsParse() throws {
    #expect(try OperationParser.parse(line: #"{"op":"deleteActivities","ids":["a","b"]}"#)
        == .deleteActivities(identifiers: ["a", "b"]))
    #expect(try OperationParser.parse(line: #"{"op":"deleteActivityDomains","domains":["recipes"]}"#)
        == .deleteActivityDomains(domains: ["recipes"]))
    #expect(try OperationParser.parse(line: #"{"op":"deleteAllActivities"}"#) == .deleteAllActivities)
}

@Test func attributesTakeTheirTypes() throws {
    let line = #"{"op":"index","index":"p","items":[{"id":"1","rating":4.5,"startDate":"2027-01-01T00:00:00Z","# +
        #""supportsNavigation":true,"phoneNumbers":["+1 555"],"attributes":{"camera":"x","iso":100,"flash":false,"# +
        #""tags":["a","b"],"taken":{"date":"2027-01-01T00:00:00Z"}}}]}"#
    guard case .index(_, let items) = try OperationParser.parse(line: line), let item = items.first else {
        Issue.record("expected an index operation")
        return
    }
    #expect(item.attributes.values == [
        .rating: .number(4.5), .startDate: .date(january2027), .supportsNavigation: .bool(true),
        .phoneNumbers: .strings(["+1 555"]), .custom("camera"): .string("x"), .custom("iso"): .number(100),
        .custom("flash"): .bool(false), .custom("tags"): .strings(["a", "b"]), .custom("taken"): .date(january2027),
    ])
}

// MARK: - Bad input: each names its field

@Test func syntaxErrorsNameTheColumn() {
    expectError(#"{"op":"deleteAll","index":"p",}"#, path: "column 31", "expected a member name in double quotes")
    expectError(#"{"op":"deleteAll","op":"deleteAll"}"#, path: "column 19", #"member "op" appears twice"#)
    expectError("[1]", path: "", "must be an object, found an array")
}

@Test func unknownOperationIsRefused() {
    expectError(#"{"op":"frobnicate"}"#, path: "op",
                #"unknown operation "frobnicate" (expected one of index, update, delete, deleteDomains, deleteAll, "# +
                #"batch, activity, deleteActivities, deleteActivityDomains, deleteAllActivities, shown, engage, advanceClock)"#)
    expectError(#"{"index":"p"}"#, path: "op", "is required")
    expectError(#"{"op":7}"#, path: "op", "must be a string, found a number")
}

@Test func unknownFieldsAreRefused() {
    expectError(#"{"op":"deleteAll","index":"p","extra":1}"#, path: "extra", "unknown field")
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","colour":"red"}]}"#, path: "items[0].colour", "unknown field")
    expectError(#"{"op":"update","index":"p","items":[{"id":"1","colour":null}]}"#, path: "items[0].colour", "unknown field")
    expectError(#"{"op":"activity","type":"t","ref":"1"}"#, path: "ref", "unknown field")
    expectError(#"{"op":"deleteAllActivities","index":"p"}"#, path: "index", "unknown field")
}

@Test func wrongTypesAreRefused() {
    expectError(#"{"op":"delete","index":"p","ids":"1"}"#, path: "ids", "must be an array, found a string")
    expectError(#"{"op":"delete","index":"p","ids":[1]}"#, path: "ids[0]", "must be a string, found a number")
    expectError(#"{"op":"deleteAll","index":null}"#, path: "index", "must be a string, found null")
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","title":5}]}"#, path: "items[0].title",
                "must be a string, found a number")
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","rating":"5"}]}"#, path: "items[0].rating",
                "must be a number, found a string")
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","keywords":["a",2]}]}"#, path: "items[0].keywords[1]",
                "must be a string, found a number")
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","supportsPhoneCall":1}]}"#,
                path: "items[0].supportsPhoneCall", "must be a boolean, found a number")
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","attributes":{"x":null}}]}"#,
                path: "items[0].attributes.x")
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","attributes":[]}]}"#, path: "items[0].attributes",
                "must be an object, found an array")
    expectError(#"{"op":"index","index":"p","items":["1"]}"#, path: "items[0]", "must be an object, found a string")
    expectError(#"{"op":"activity","type":"t","searchable":"yes"}"#, path: "searchable", "must be a boolean, found a string")
    expectError(#"{"op":"activity","type":"t","userInfo":{"n":1}}"#, path: "userInfo.n", "must be a string, found a number")
}

@Test func standardAttributesCannotHideAmongCustomOnes() {
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","attributes":{"title":"x"}}]}"#,
                path: "items[0].attributes.title", "is a standard attribute; give it as a member of the item")
}

@Test func badDatesAreRefused() {
    let message = "is not an ISO 8601 date-time such as 2027-01-01T00:00:00Z"
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","expires":"2027-02-30T00:00:00Z"}]}"#,
                path: "items[0].expires", message)
    expectError(#"{"op":"advanceClock","to":"tomorrow"}"#, path: "to", message)
    expectError(#"{"op":"advanceClock","to":1798761600000}"#, path: "to", "must be an ISO 8601 date string, found a number")
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","attributes":{"taken":{"date":"2027-13-01T00:00:00Z"}}}]}"#,
                path: "items[0].attributes.taken.date", message)
    expectError(#"{"op":"update","index":"p","items":[{"id":"1","dueDate":"soon"}]}"#, path: "items[0].dueDate", message)
}

@Test func badBase64IsRefused() {
    expectError(#"{"op":"batch","index":"p","clientState":"!!!!","ops":[]}"#, path: "clientState", "is not valid base64")
    expectError(#"{"op":"batch","index":"p","clientState":"AQID","expectedClientState":"AQI","ops":[]}"#,
                path: "expectedClientState", "is not valid base64")
    expectError(#"{"op":"batch","index":"p","clientState":5,"ops":[]}"#, path: "clientState",
                "must be a base64 string, found a number")
}

@Test func stringsOverTheTextLimitAreRefused() throws {
    let limit = Limits.textBytes
    let atLimit = String(repeating: "a", count: limit)
    #expect(throws: Never.self) {
        try OperationParser.parse(line: #"{"op":"index","index":"p","items":[{"id":"1","title":""# + atLimit + #""}]}"#)
    }
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","title":""# + atLimit + #"a"}]}"#,
                path: "items[0].title", "is \(limit + 1) bytes; the limit is \(limit)")
    // Bytes, not characters: "é" is two bytes.
    let accented = String(repeating: "é", count: limit / 2) + "a"
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","keywords":["x",""# + accented + #""]}]}"#,
                path: "items[0].keywords[1]", "is \(limit + 1) bytes; the limit is \(limit)")
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","attributes":{"note":""# + atLimit + #"a"}}]}"#,
                path: "items[0].attributes.note")
    expectError(#"{"op":"update","index":"p","items":[{"id":"1","title":""# + atLimit + #"a"}]}"#,
                path: "items[0].title")
    expectError(#"{"op":"activity","type":"t","title":""# + atLimit + #"a"}"#, path: "title")
    let longIdentifier = String(repeating: "i", count: Limits.identifierBytes + 1)
    expectError(#"{"op":"delete","index":"p","ids":[""# + longIdentifier + #""]}"#, path: "ids[0]",
                "is \(Limits.identifierBytes + 1) bytes; the limit is \(Limits.identifierBytes)")
}

@Test func overlongLinesAreRefusedBeforeParsing() {
    do {
        _ = try OperationParser.parse(line: [UInt8](repeating: 0x20, count: Limits.lineBytes + 1))
        Issue.record("an overlong line parsed")
    } catch {
        #expect(error.path == "")
        #expect(error.message == "line is \(Limits.lineBytes + 1) bytes; the limit is \(Limits.lineBytes)")
    }
}

@Test func duplicateIdentifiersInOneCallAreRefused() {
    expectError(#"{"op":"index","index":"p","items":[{"id":"1"},{"id":"1"}]}"#, path: "items[1].id")
    expectError(#"{"op":"update","index":"p","items":[{"id":"a"},{"id":"b"},{"id":"a"}]}"#, path: "items[2].id")
    expectError(#"{"op":"delete","index":"p","ids":["1","4","1"]}"#, path: "ids[2]")
    expectError(#"{"op":"deleteDomains","index":"p","domains":["a","a"]}"#, path: "domains[1]")
    expectError(#"{"op":"deleteActivities","ids":["x","x"]}"#, path: "ids[1]")
    // The message points at the first occurrence.
    do {
        _ = try OperationParser.parse(line: #"{"op":"index","index":"p","items":[{"id":"1"},{"id":"2"},{"id":"1"}]}"#)
    } catch {
        #expect(error.message.hasSuffix("(also at items[0])"), "\(error)")
    }
    // The same identifier in two calls of one batch is two calls, not a duplicate.
    #expect(throws: Never.self) {
        try OperationParser.parse(line: #"{"op":"batch","index":"p","clientState":"","ops":["# +
            #"{"op":"index","items":[{"id":"1"}]},{"op":"delete","ids":["1"]}]}"#)
    }
}

@Test func emptyIdentifiersAndListsAreRefused() {
    expectError(#"{"op":"index","index":"p","items":[{"id":""}]}"#, path: "items[0].id", "must not be empty")
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","domain":""}]}"#, path: "items[0].domain", "must not be empty")
    expectError(#"{"op":"index","index":"p","items":[]}"#, path: "items", "must not be empty")
    expectError(#"{"op":"update","index":"p","items":[{"id":""}]}"#, path: "items[0].id", "must not be empty")
    expectError(#"{"op":"delete","index":"p","ids":[]}"#, path: "ids", "must not be empty")
    expectError(#"{"op":"delete","index":"p","ids":["1",""]}"#, path: "ids[1]", "must not be empty")
    expectError(#"{"op":"deleteAll","index":""}"#, path: "index", "must not be empty")
    expectError(#"{"op":"shown","ref":""}"#, path: "ref", "must not be empty")
    expectError(#"{"op":"activity","type":""}"#, path: "type", "must not be empty")
    expectError(#"{"op":"index","index":"p","items":[{"id":"1","attributes":{"":1}}]}"#,
                path: "items[0].attributes.", "must not be empty")
}

@Test func batchesHoldOnlyIndexOperationsOfTheirIndex() {
    let onlyIndex = "cannot appear in a batch (only index, update, delete, deleteDomains, deleteAll)"
    expectError(#"{"op":"batch","index":"p","clientState":"","ops":[{"op":"deleteAll"},{"op":"activity","type":"t"}]}"#,
                path: "ops[1].op", #""activity" "# + onlyIndex)
    expectError(#"{"op":"batch","index":"p","clientState":"","ops":[{"op":"shown","ref":"1"}]}"#,
                path: "ops[0].op", #""shown" "# + onlyIndex)
    expectError(#"{"op":"batch","index":"p","clientState":"","ops":[{"op":"deleteAllActivities"}]}"#,
                path: "ops[0].op", #""deleteAllActivities" "# + onlyIndex)
    expectError(#"{"op":"batch","index":"p","clientState":"","ops":[{"op":"batch","clientState":"","ops":[]}]}"#,
                path: "ops[0].op", #""batch" "# + onlyIndex)
    expectError(#"{"op":"batch","index":"p","clientState":"","ops":[{"op":"deleteAll","index":"q"}]}"#,
                path: "ops[0].index", "names another index than the batch's")
    expectError(#"{"op":"batch","index":"p","clientState":"","ops":[{"op":"nope"}]}"#, path: "ops[0].op")
    expectError(#"{"op":"batch","index":"p","clientState":"","ops":[7]}"#, path: "ops[0]", "must be an object, found a number")
}

@Test func errorsInsideABatchNameTheirFullPath() {
    expectError(#"{"op":"batch","index":"p","clientState":"","ops":[{"op":"delete","ids":["1"]},"# +
                #"{"op":"index","items":[{"id":"1"},{"id":"1"}]}]}"#, path: "ops[1].items[1].id")
    expectError(#"{"op":"batch","index":"p","clientState":"","ops":[{"op":"index","items":[{"id":"1","title":3}]}]}"#,
                path: "ops[0].items[0].title", "must be a string, found a number")
    expectError(#"{"op":"batch","index":"p","clientState":"","ops":[{"op":"delete","ids":[""]}]}"#,
                path: "ops[0].ids[0]", "must not be empty")
}

@Test func clientStatesOverTheLimitAreRefused() {
    let tooBig = String(repeating: "A", count: (Limits.clientStateBytes + 3) / 3 * 4)
    expectError(#"{"op":"batch","index":"p","clientState":""# + tooBig + #"","ops":[]}"#, path: "clientState")
}

@Test func errorDescriptionsJoinPathAndMessage() {
    #expect(OperationError(path: "items[0].id", "must not be empty").description == "items[0].id: must not be empty")
    #expect(OperationError(path: "", "line is too long").description == "line is too long")
    #expect(OperationError(path: "ids[1]", "x").nested(under: "ops[2]").path == "ops[2].ids[1]")
    #expect(OperationError(path: "[1]", "x").nested(under: "ops").path == "ops[1]")
}

/// Found by the fuzzer (`tools/fuzz/failures/operations/`): a string holding
/// U+0085 or U+2028, which Swift counts as line breaks, prints escaped, as
/// every control character and line separator does, so it is one line on
/// any terminal, and parses back to the same operation.
@Test func anOperationWithUnicodeLineBreaksPrintsAsOneLineAndParsesBack() throws {
    let line = #"{"op":"activity","type":"com.example.read","title":"a\u0085b\u2028c","userInfo":{"k":"x\u0085y"}}"#
    let operation = try OperationParser.parse(line: line)
    let printed = operation.jsonLine
    #expect(!printed.utf8.contains(0x0A) && !printed.utf8.contains(0x0D))
    #expect(!printed.unicodeScalars.contains("\u{85}") && printed.contains(#"a\u0085b\u2028c"#))
    #expect(try OperationParser.parse(line: printed) == operation)
}
