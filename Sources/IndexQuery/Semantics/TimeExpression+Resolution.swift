import IndexModel

extension TimeExpression {
    private static let millisecondsPerDay: Int64 = 86_400_000

    /// The instant this value names, given the current time. Periods start at
    /// midnight UTC; weeks start on Monday (ISO 8601). `$time.today` is the start
    /// of the current day, `$time.today(-1)` the start of the day before, and so on.
    public func resolve(now: Timestamp) -> Timestamp {
        let milliseconds = now.millisecondsSince1970
        let day = TimeExpression.floorDivide(milliseconds, TimeExpression.millisecondsPerDay)
        func startOf(day: Int64) -> Timestamp {
            Timestamp(millisecondsSince1970: day * TimeExpression.millisecondsPerDay)
        }
        func startOfWeek(offset: Int64) -> Timestamp {
            // 1970-01-01 was a Thursday, three days after a Monday.
            let monday = day - TimeExpression.floorModulo(day + 3, 7)
            return startOf(day: monday + 7 * offset)
        }
        switch self {
        case .now(let offset):
            return Timestamp(millisecondsSince1970: milliseconds + offset * 1000)
        case .today(let offset):
            return startOf(day: day + offset)
        case .yesterday(let offset):
            return startOf(day: day - 1 + offset)
        case .thisWeek(let offset):
            return startOfWeek(offset: offset)
        case .lastWeek(let offset):
            return startOfWeek(offset: offset - 1)
        case .thisMonth(let offset):
            let civil = ISO8601.civilFromDays(day)
            let months = civil.year * 12 + Int64(civil.month - 1) + offset
            let year = TimeExpression.floorDivide(months, 12)
            let month = Int(TimeExpression.floorModulo(months, 12)) + 1
            return startOf(day: ISO8601.daysFromCivil(year: Int(year), month: month, day: 1))
        case .thisYear(let offset):
            let civil = ISO8601.civilFromDays(day)
            return startOf(day: ISO8601.daysFromCivil(year: Int(civil.year + offset), month: 1, day: 1))
        case .iso(let timestamp):
            return timestamp
        }
    }

    static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return (value % divisor != 0 && (value < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }

    static func floorModulo(_ value: Int64, _ divisor: Int64) -> Int64 {
        let remainder = value % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}

extension QueryExpression {
    /// The same query with every `$time` value replaced by the instant it names
    /// at `now`, so that a query evaluated over many rows sees one time.
    public func resolvingTimes(now: Timestamp) -> QueryExpression {
        func resolve(_ value: QueryValue) -> QueryValue {
            if case .time(let time) = value { return .time(.iso(time.resolve(now: now))) }
            return value
        }
        switch self {
        case .comparison(var comparison):
            comparison.value = resolve(comparison.value)
            return .comparison(comparison)
        case .inRange(var range):
            range.lower = resolve(range.lower)
            range.upper = resolve(range.upper)
            return .inRange(range)
        case .and(let left, let right):
            return .and(left.resolvingTimes(now: now), right.resolvingTimes(now: now))
        case .or(let left, let right):
            return .or(left.resolvingTimes(now: now), right.resolvingTimes(now: now))
        case .not(let inner):
            return .not(inner.resolvingTimes(now: now))
        }
    }
}
