import IndexModel
import PropertyBased
import Testing

private func milliseconds(_ text: String) -> Int64? {
    ISO8601.parse(text)?.millisecondsSince1970
}

@Test func parsesUTCInstants() {
    #expect(milliseconds("1970-01-01T00:00:00Z") == 0)
    #expect(milliseconds("2027-01-01T00:00:00Z") == 1_798_761_600_000)
    #expect(milliseconds("2015-05-12T06:30:00Z") == 1_431_412_200_000)
    #expect(milliseconds("2000-02-29T23:59:59Z") == 951_868_799_000)
    #expect(milliseconds("9999-12-31T23:59:59.999Z") == 253_402_300_799_999)
    #expect(milliseconds("2015-05-12t06:30:00z") == 1_431_412_200_000, "RFC 3339 allows lower-case t and z")
}

@Test func offsetsNameTheSameInstantInAnotherZone() {
    #expect(milliseconds("2015-05-12T08:30:00+02:00") == milliseconds("2015-05-12T06:30:00Z"))
    #expect(milliseconds("2015-05-11T20:30:00-10:00") == milliseconds("2015-05-12T06:30:00Z"))
    #expect(milliseconds("2015-05-12T06:30:00+00:00") == milliseconds("2015-05-12T06:30:00Z"))
    #expect(milliseconds("2015-05-12T06:30:00-00:00") == milliseconds("2015-05-12T06:30:00Z"))
    #expect(milliseconds("2015-05-12T12:15:00+05:45") == milliseconds("2015-05-12T06:30:00Z"))
    #expect(milliseconds("1970-01-01T00:00:00+23:59") == -86_340_000)
    #expect(milliseconds("2015-05-12T06:30:00+24:00") == nil)
    #expect(milliseconds("2015-05-12T06:30:00+01:60") == nil)
    #expect(milliseconds("2015-05-12T06:30:00+0100") == nil)
    #expect(milliseconds("2015-05-12T06:30:00+01") == nil)
}

@Test func fractionsAreMillisecondsTruncated() {
    #expect(milliseconds("1970-01-01T00:00:00.5Z") == 500)
    #expect(milliseconds("1970-01-01T00:00:00.25Z") == 250)
    #expect(milliseconds("1970-01-01T00:00:00.125Z") == 125)
    #expect(milliseconds("1970-01-01T00:00:00.000Z") == 0)
    #expect(milliseconds("1970-01-01T00:00:00.1239Z") == 123, "digits below a millisecond are dropped")
    #expect(milliseconds("1970-01-01T00:00:00.999999999Z") == 999)
    #expect(milliseconds("1970-01-01T00:00:00.Z") == nil)
    #expect(milliseconds("1970-01-01T00:00:00,5Z") == nil)
}

@Test func leapYearsFollowTheGregorianRules() {
    #expect(ISO8601.parse("2024-02-29T00:00:00Z") != nil)
    #expect(ISO8601.parse("2000-02-29T00:00:00Z") != nil, "divisible by 400")
    #expect(ISO8601.parse("1900-02-29T00:00:00Z") == nil, "divisible by 100 but not 400")
    #expect(ISO8601.parse("2023-02-29T00:00:00Z") == nil)
    #expect(ISO8601.parse("2100-02-29T00:00:00Z") == nil)
    #expect(milliseconds("2024-03-01T00:00:00Z")! - milliseconds("2024-02-28T00:00:00Z")! == 2 * 86_400_000)
    #expect(milliseconds("2023-03-01T00:00:00Z")! - milliseconds("2023-02-28T00:00:00Z")! == 86_400_000)
}

@Test func impossibleDatesAndTimesAreRefused() {
    let invalid = [
        "2015-02-30T00:00:00Z", "2015-04-31T00:00:00Z", "2015-13-01T00:00:00Z", "2015-00-10T00:00:00Z",
        "2015-05-00T00:00:00Z", "2015-05-32T00:00:00Z", "2015-05-12T24:00:00Z", "2015-05-12T23:60:00Z",
        "2015-05-12T23:59:60Z",
    ]
    for text in invalid {
        #expect(ISO8601.parse(text) == nil, "\(text)")
    }
}

@Test func malformedTextIsRefused() {
    let malformed = [
        "", "2015-05-12", "2015-05-12T06:30Z", "2015-05-12T06:30:00", "2015-05-12 06:30:00Z", "15-05-12T06:30:00Z",
        "2015-5-12T06:30:00Z", "2015/05/12T06:30:00Z", "2015-05-12T06:30:00ZZ", "2015-05-12T06:30:00Z ",
        " 2015-05-12T06:30:00Z", "+2015-05-12T06:30:00Z", "2015-05-12T06:30:00+", "２０１５-05-12T06:30:00Z",
        "2015-05-12T06:30:00UTC",
    ]
    for text in malformed {
        #expect(ISO8601.parse(text) == nil, "\(text)")
    }
}

@Test func instantsBefore1970AreNegative() {
    #expect(milliseconds("1969-12-31T23:59:59Z") == -1_000)
    #expect(milliseconds("1969-12-31T23:59:59.500Z") == -500)
    #expect(milliseconds("1969-12-31T23:59:59.999Z") == -1)
    #expect(milliseconds("1900-01-01T00:00:00Z") == -2_208_988_800_000)
    #expect(milliseconds("0000-01-01T00:00:00Z") == -62_167_219_200_000)
    #expect(ISO8601.format(Timestamp(millisecondsSince1970: -1)) == "1969-12-31T23:59:59.999Z")
    #expect(ISO8601.format(Timestamp(millisecondsSince1970: -500)) == "1969-12-31T23:59:59.500Z")
    #expect(ISO8601.format(Timestamp(millisecondsSince1970: -1_000)) == "1969-12-31T23:59:59Z")
    #expect(ISO8601.format(Timestamp(millisecondsSince1970: -2_208_988_800_000)) == "1900-01-01T00:00:00Z")
    #expect(ISO8601.format(Timestamp(millisecondsSince1970: -62_167_219_200_000)) == "0000-01-01T00:00:00Z")
}

@Test func formatWritesUTCWithMillisecondsOnlyWhenNonzero() {
    #expect(ISO8601.format(Timestamp(millisecondsSince1970: 0)) == "1970-01-01T00:00:00Z")
    #expect(ISO8601.format(Timestamp(millisecondsSince1970: 1_431_412_200_250)) == "2015-05-12T06:30:00.250Z")
    #expect(ISO8601.format(Timestamp(millisecondsSince1970: 1_431_412_200_007)) == "2015-05-12T06:30:00.007Z")
    #expect(Timestamp(millisecondsSince1970: 1_798_761_600_000).description == "2027-01-01T00:00:00Z")
}

@Test func formatHandlesEveryTimestampWithoutTrapping() {
    // Timestamps come from decoded events too, so the extremes of Int64 must print.
    #expect(ISO8601.format(Timestamp(millisecondsSince1970: Int64.max)) == "292278994-08-17T07:12:55.807Z")
    #expect(ISO8601.format(Timestamp(millisecondsSince1970: Int64.min)) == "-292275055-05-16T16:47:04.192Z")
    #expect(ISO8601.format(Timestamp(millisecondsSince1970: -62_167_219_200_001)) == "-0001-12-31T23:59:59.999Z")
}

/// Instants whose years have four digits, the range the parser reads.
private let fourDigitYearInstants = Generator<Timestamp, Shrink.None<Timestamp>>(run: { rng in
    Timestamp(millisecondsSince1970: Int64.random(in: -62_167_219_200_000...253_402_300_799_999, using: &rng))
})

@Test func formatThenParseIsTheIdentity() async {
    await propertyCheck(count: 2000, input: fourDigitYearInstants) { timestamp in
        let text = ISO8601.format(timestamp)
        #expect(ISO8601.parse(text) == timestamp, "\(text)")
        #expect(text.hasSuffix("Z"))
    }
}

@Test func parseThenFormatNormalisesToUTC() async {
    await propertyCheck(count: 500, input: fourDigitYearInstants) { timestamp in
        // The same instant written in another zone reads back as the same instant.
        let utc = ISO8601.format(timestamp)
        guard let shifted = ISO8601.parse(utc)?.adding(milliseconds: 5 * 3_600_000 + 30 * 60_000),
              shifted.millisecondsSince1970 <= 253_402_300_799_999 else { return }
        let local = String(ISO8601.format(shifted).dropLast()) + "+05:30"
        #expect(ISO8601.parse(local) == timestamp, "\(local)")
    }
}

@Test func civilDaysMatchKnownDates() {
    #expect(ISO8601.daysFromCivil(year: 1970, month: 1, day: 1) == 0)
    #expect(ISO8601.daysFromCivil(year: 1969, month: 12, day: 31) == -1)
    #expect(ISO8601.daysFromCivil(year: 2000, month: 3, day: 1) == 11_017)
    #expect(ISO8601.daysFromCivil(year: 1600, month: 2, day: 29) == -135_081)
}
