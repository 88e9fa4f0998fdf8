import IndexModel
import PropertyBased
import Testing

@Test func everyEventHasAJSONFormThatReadsBack() async {
    // Decoded events may carry any timestamp, so printing must not trap on the extremes.
    await propertyCheck(count: 1000, input: EventGenerators.event) { event throws in
        let value = event.jsonValue
        guard case .object(let object) = value else {
            Issue.record("\(event.kind) printed as \(value.typeDescription)")
            return
        }
        #expect(object.keys.first == "kind")
        #expect(object["kind"] == .string(event.kind.name))
        let line = JSONWriter.compact(value)
        #expect(JSONWriter.compact(try JSONReader.parse(line)) == line)
    }
}

@Test func itemEventsPrintInTheOperationsForm() {
    var item = SearchableItem(uniqueIdentifier: "1", domainIdentifier: "album-1",
                              expirationDate: Timestamp(millisecondsSince1970: 1_798_761_600_000))
    item.attributes.title = "Maui"
    item.attributes.rankingHint = 2
    item.attributes[.custom("taken")] = .date(Timestamp(millisecondsSince1970: 250))
    #expect(JSONWriter.compact(JournalEvent.itemIndexed(index: "photos", item: item).jsonValue)
        == #"{"kind":"itemIndexed","index":"photos","id":"1","domain":"album-1","expires":"2027-01-01T00:00:00Z","#
        + #""attributes":{"title":"Maui","rankingHint":2,"taken":"1970-01-01T00:00:00.250Z"}}"#)

    var changes = AttributeChanges()
    changes[.title] = .some(nil)
    changes[.keywords] = .some(.strings(["a"]))
    let update = ItemUpdate(uniqueIdentifier: "1", domainIdentifier: .clear, expirationDate: .keep, attributes: changes)
    #expect(JSONWriter.compact(JournalEvent.itemUpdated(index: "photos", update: update).jsonValue)
        == #"{"kind":"itemUpdated","index":"photos","id":"1","domain":null,"attributes":{"title":null,"keywords":["a"]}}"#)
}

@Test func deletionsAndStatesPrintTheirCause() {
    #expect(JSONWriter.compact(JournalEvent.itemDeleted(index: "p", identifier: "1", cause: .domain("a.b")).jsonValue)
        == #"{"kind":"itemDeleted","index":"p","id":"1","cause":"domain","domain":"a.b"}"#)
    #expect(JSONWriter.compact(JournalEvent.activityDeleted(key: "id:x", cause: .all).jsonValue)
        == #"{"kind":"activityDeleted","key":"id:x","cause":"all"}"#)
    #expect(JSONWriter.compact(JournalEvent.clientStateSet(index: "p", state: [0xFF, 0x00, 0x01]).jsonValue)
        == #"{"kind":"clientStateSet","index":"p","clientState":"/wAB"}"#)
    #expect(JSONWriter.compact(JournalEvent.resultEngaged(ref: "1").jsonValue) == #"{"kind":"resultEngaged","ref":"1"}"#)
}

@Test func activitiesPrintWithTheirKey() {
    let activity = UserActivity(activityType: "com.example/read", userInfo: ["b": "2", "a": "1"],
                                eligibleForSearch: true, persistentIdentifier: "article-7")
    #expect(JSONWriter.compact(JournalEvent.activityRecorded(activity).jsonValue)
        == #"{"kind":"activityRecorded","key":"id:article-7","activity":{"type":"com.example/read","# +
        #""userInfo":{"a":"1","b":"2"},"searchable":true,"public":false,"handoff":false,"id":"article-7"}}"#)
}
