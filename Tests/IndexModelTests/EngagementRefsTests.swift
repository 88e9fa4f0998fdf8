import IndexModel
import PropertyBased
import Testing

/// Engagement with an activity is matched by its references: the privacy
/// projection counts each (reference, hash) once per activity, so a reference
/// the activity names twice must appear once.
@Test func anActivitysEngagementRefsAreItsSetReferencesEachOnceInOrder() async {
    let cases: [(String?, String?, String?, [String])] = [
        (nil, nil, nil, []),
        ("https://e.com/b", nil, nil, ["https://e.com/b"]),
        ("z", "a", "m", ["a", "m", "z"]),
        ("same", "same", nil, ["same"]),
        ("same", "same", "same", ["same"]),
        (nil, "b", "a", ["a", "b"]),
        ("b", "a", "b", ["a", "b"]),
    ]
    for (url, related, weak, expected) in cases {
        let activity = UserActivity(activityType: "t", webpageURL: url, relatedUniqueIdentifier: related,
                                    weakRelatedUniqueIdentifier: weak)
        #expect(activity.engagementRefs == expected, "\(String(describing: url)), \(String(describing: related)), \(String(describing: weak))")
    }
    await propertyCheck(count: 500, input: EventGenerators.activity) { activity in
        let refs = [activity.webpageURL, activity.relatedUniqueIdentifier, activity.weakRelatedUniqueIdentifier].compactMap { $0 }
        #expect(activity.engagementRefs == Array(Set(refs)).sorted())
    }
}
