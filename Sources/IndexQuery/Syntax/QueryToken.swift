/// One token of a query, with the character offset where it starts.
struct QueryToken: Hashable, Sendable {
    enum Kind: Hashable, Sendable {
        case identifier(String)
        case star
        case doubleStar
        case comparison(ComparisonOperator)
        case and
        case or
        case not
        case openParenthesis
        case closeParenthesis
        case comma
        case text(TextLiteral)
        case number(Double)
        case time(TimeExpression)
        case end
    }

    var kind: Kind
    var offset: Int

    /// How the token is named in "expected …, found …" messages.
    var described: String {
        switch kind {
        case .identifier(let name): name == "InRange" ? "InRange" : "an attribute name"
        case .star: "*"
        case .doubleStar: "**"
        case .comparison(let op): op.rawValue
        case .and: "&&"
        case .or: "||"
        case .not: "!"
        case .openParenthesis: "("
        case .closeParenthesis: ")"
        case .comma: ","
        case .text: "a string"
        case .number: "a number"
        case .time: "a $time value"
        case .end: "the end of the query"
        }
    }
}
