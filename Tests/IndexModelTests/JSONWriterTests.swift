import IndexModel
import PropertyBased
import Testing

/// Random JSON documents up to a few levels deep, with unique member names.
private let documents = Generator<JSONValue, Shrink.None<JSONValue>>(run: { rng in
    randomValue(&rng, depth: 0)
})

private func randomValue(_ rng: inout some RandomNumberGenerator, depth: Int) -> JSONValue {
    let choice = Int.random(in: 0..<(depth < 4 ? 8 : 6), using: &rng)
    switch choice {
    case 0: return .null
    case 1: return .bool(Bool.random(using: &rng))
    case 2: return .integer(Int64.random(in: Int64.min...Int64.max, using: &rng))
    case 3: return .double(RandomEvents.finiteDouble(&rng))
    case 4: return .integer(Int64.random(in: -1000...1000, using: &rng))
    case 5: return .string(RandomEvents.string(&rng))
    case 6: return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in randomValue(&rng, depth: depth + 1) })
    default:
        var object = JSONObject()
        for _ in 0..<Int.random(in: 0...4, using: &rng) {
            object[RandomEvents.string(&rng, maximumPieces: 3)] = randomValue(&rng, depth: depth + 1)
        }
        return .object(object)
    }
}

/// What a value reads back as: the writer prints a whole double below 10^15 as an
/// integer (a ranking hint of 2.0 prints as `2`), which reads back as `.integer`.
private func readBackForm(_ value: JSONValue) -> JSONValue {
    switch value {
    case .double(let double) where double == double.rounded() && abs(double) < 1e15:
        .integer(Int64(double))
    case .array(let elements):
        .array(elements.map(readBackForm))
    case .object(let object):
        .object(object.members.reduce(into: JSONObject()) { result, member in
            result[member.key] = readBackForm(member.value)
        })
    default:
        value
    }
}

@Test func writtenDocumentsReadBackAsTheSameValue() async {
    await propertyCheck(count: 1000, input: documents) { value throws in
        let compact = JSONWriter.compact(value)
        let pretty = JSONWriter.pretty(value)
        #expect(!compact.contains("\n"), "compact output is one line")
        #expect(try JSONReader.parse(compact) == readBackForm(value))
        #expect(try JSONReader.parse(pretty) == readBackForm(value))
        // Writing what was read gives the same text again.
        #expect(JSONWriter.compact(try JSONReader.parse(compact)) == compact)
    }
}

@Test func outputIsDeterministicAndKeepsMemberOrder() {
    let value: JSONValue = .object([
        "z": .integer(1), "a": .array([.bool(true), .null, .string("x")]), "m": .object([:]), "e": .array([]),
    ])
    #expect(JSONWriter.compact(value) == #"{"z":1,"a":[true,null,"x"],"m":{},"e":[]}"#)
    #expect(JSONWriter.pretty(value) == """
        {
          "z": 1,
          "a": [
            true,
            null,
            "x"
          ],
          "m": {},
          "e": []
        }
        """)
    #expect(JSONWriter.compact(value) == JSONWriter.compact(value))
}

/// Quotes, backslashes and every character a terminal or a script could
/// be steered by (C0, DEL, C1, the line and paragraph separators) are
/// escaped; everything else is written as it is.
@Test func stringsEscapeQuotesBackslashesAndEveryControlCharacter() {
    #expect(JSONWriter.compact(.string("a\"b\\c/d")) == #""a\"b\\c/d""#)
    #expect(JSONWriter.compact(.string("\n\r\t")) == #""\n\r\t""#)
    #expect(JSONWriter.compact(.string("\u{0}\u{8}\u{C}\u{1F}\u{7F}")) == #""\u0000\u0008\u000c\u001f\u007f""#)
    #expect(JSONWriter.compact(.string("\u{85}\u{9B}\u{2028}\u{2029}")) == #""\u0085\u009b\u2028\u2029""#)
    #expect(JSONWriter.compact(.string("é e\u{301} 😀 \u{A0}")) == "\"é e\u{301} 😀 \u{A0}\"")
}

@Test func numbersArePrintedExactly() {
    #expect(JSONWriter.compact(.integer(Int64.min)) == "-9223372036854775808")
    #expect(JSONWriter.compact(.double(2)) == "2")
    #expect(JSONWriter.compact(.double(-3)) == "-3")
    #expect(JSONWriter.compact(.double(0.5)) == "0.5")
    #expect(JSONWriter.compact(.double(0.1)) == "0.1")
    // From 10^15 on, whole doubles keep their double form (Swift switches to an exponent at 2^53).
    #expect(JSONWriter.compact(.double(1e15)) == "1000000000000000.0")
    #expect(JSONWriter.compact(.double(1e16)) == "1e+16")
    #expect(JSONWriter.compact(.double(999_999_999_999_999)) == "999999999999999")
    #expect(JSONWriter.compact(.double(.leastNonzeroMagnitude)) == "5e-324")
    #expect(JSONWriter.compact(.double(.greatestFiniteMagnitude)) == "1.7976931348623157e+308")
    // JSON has no NaN or infinity; they print as null rather than as invalid JSON.
    #expect(JSONWriter.compact(.array([.double(.nan), .double(.infinity), .double(-.infinity)])) == "[null,null,null]")
}
