import IndexModel
import Testing

/// `AppOperation.validate()` guards operations built in Swift code too, not only
/// those read from operations files: whatever it lets through gets journaled.
private func validationError(_ operation: AppOperation) -> OperationError? {
    do {
        try operation.validate()
        return nil
    } catch {
        return error
    }
}

private func item(_ key: AttributeKey, _ value: AttributeValue) -> AppOperation {
    var item = SearchableItem(uniqueIdentifier: "1")
    item.attributes[key] = value
    return .index(index: "p", items: [item])
}

@Test func customKeysNamedLikeStandardOnesAreRefused() {
    // The codec writes a standard name only by its tag, so such an event could never be read back.
    let error = validationError(item(.custom("title"), .string("x")))
    #expect(error?.path == "items[0].attributes.title")
    #expect(validationError(.activity(UserActivity(activityType: "t", attributes: AttributeSet([.custom("rating"): .number(1)]))))?
        .path == "attributes.rating")
    var changes = AttributeChanges()
    changes[.custom("keywords")] = .some(.strings([]))
    #expect(validationError(.update(index: "p", updates: [ItemUpdate(uniqueIdentifier: "1", attributes: changes)]))?.path
        == "items[0].attributes.keywords")
    #expect(validationError(item(.custom("titles"), .string("x"))) == nil)
}

@Test func valuesMustFitTheirKeys() {
    #expect(validationError(item(.title, .number(1))) == OperationError(path: "items[0].title", "must be a string, found a number"))
    #expect(validationError(item(.rating, .number(.nan))) == OperationError(path: "items[0].rating", "must be a finite number"))
    #expect(validationError(item(.custom("x"), .number(-.infinity)))?.path == "items[0].attributes.x")
    #expect(validationError(item(.keywords, .strings(Array(repeating: "k", count: Limits.listElements + 1))))?.path
        == "items[0].keywords")
}

@Test func attributeSetsAreLimitedInSize() {
    var attributes = AttributeSet()
    for position in 0...Limits.attributesPerSet { attributes[.custom("a\(position)")] = .bool(true) }
    let error = validationError(.index(index: "p", items: [SearchableItem(uniqueIdentifier: "1", attributes: attributes)]))
    #expect(error?.path == "items[0]")
}

@Test func callsAreLimitedInElements() {
    let identifiers = (0...Limits.elementsPerCall).map { "id\($0)" }
    #expect(validationError(.delete(index: "p", identifiers: identifiers))?.path == "ids")
    #expect(validationError(.delete(index: "p", identifiers: Array(identifiers.dropLast()))) == nil)
}

@Test func batchesAreCheckedOperationByOperation() {
    let batch = IndexBatch(index: "p", operations: [.deleteAll(index: "p"), .engage(ref: "1")], clientState: [])
    #expect(validationError(.batch(batch))?.path == "ops[1].op")
    let other = IndexBatch(index: "p", operations: [.deleteAll(index: "q")], clientState: [])
    #expect(validationError(.batch(other))?.path == "ops[0].index")
    let tooBig = IndexBatch(index: "p", operations: [], clientState: [], condition: .expecting(Array(repeating: 0, count: Limits.clientStateBytes + 1)))
    #expect(validationError(.batch(tooBig))?.path == "expectedClientState")
}
