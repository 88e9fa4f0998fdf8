import CLibXML2
import Foundation
import IndexModel

/// Text as a page's value keeps it, gathered a piece at a time: runs of
/// whitespace become one space (none at either end), control characters
/// are left out, and gathering stops at `limit` characters.
struct CleanText {
    let limit: Int
    private(set) var text = ""
    private(set) var count = 0
    private var pendingSpace = false

    init(limit: Int) {
        self.limit = limit
    }

    var isFull: Bool { count >= limit }

    mutating func append(_ piece: String) {
        for character in piece {
            if isFull { return }
            if character.isWhitespace {
                pendingSpace = count > 0
                continue
            }
            if character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) { continue }
            put(character)
        }
    }

    /// Appends another gathering's text as if its pieces had been appended.
    mutating func append(_ other: CleanText, leadingSpace: Bool, trailingSpace: Bool) {
        if leadingSpace, count > 0 { pendingSpace = true }
        for character in other.text {
            if isFull { return }
            if character == " " {
                pendingSpace = count > 0
                continue
            }
            put(character)
        }
        if trailingSpace, count > 0 { pendingSpace = true }
    }

    /// Appends a visible character, after the space pending before it (the
    /// space alone when it fills the text).
    private mutating func put(_ character: Character) {
        if pendingSpace {
            text.append(" ")
            count += 1
            pendingSpace = false
            if isFull { return }
        }
        text.append(character)
        count += 1
    }
}

/// One walk over a page's tree (`HTMLDocument.walk`), reading its markup as
/// it goes. Each node is visited once: an element's attributes when it is
/// entered, a text node's content once for every value being gathered from
/// the elements around it. Those are at most the fields one microdata item
/// takes, the `<title>` and one JSON-LD block, each stopping at its limit,
/// so the work is linear in the page.
struct PageReading {
    private let linkSchemes: Set<String>
    private var markup = WebMarkup()
    private var jsonLDBlocks = 0
    private var ldThings: [WebMarkup.Thing] = []
    private var microdata: [WebMarkup.Thing] = []
    /// The `itemscope` elements the walk is inside, innermost last.
    private var scopes: [Scope] = []
    /// Values being taken from an element's text, until it ends.
    private var gatherings: [Gathering] = []
    /// The fields of each microdata item that an element has taken, so that
    /// the first element giving one keeps it.
    private var claimed: [Set<Field>] = []
    private var deepest = 0

    private struct Scope {
        let node: xmlNodePtr
        /// The microdata item this scope is, when it is a top-level one.
        let thing: Int?
        /// The item this scope is a property of (`aggregateRating`, `offers`,
        /// `potentialAction`), when its enclosing scope is a top-level item.
        let owner: (thing: Int, property: String)?
    }

    /// A field of a microdata item, as `itemprop` names it.
    private enum Field: Hashable {
        case name, description, image, ratingValue, ratingCount, price, priceCurrency, actionTarget
    }

    private enum Target {
        case title
        case jsonLD(block: Int)
        case field(thing: Int, Field, source: String)
    }

    private struct Gathering {
        let node: xmlNodePtr
        let target: Target
        /// Cleaned text, for a value.
        var clean = CleanText(limit: WebMarkupReader.maximumText)
        /// The raw text, for a JSON-LD block.
        var raw: String?
    }

    init(linkSchemes: Set<String>) {
        self.linkSchemes = linkSchemes
    }

    mutating func take(_ step: HTMLDocument.Step) {
        switch step {
        case .enter(let element, let depth):
            deepest = max(deepest, depth)
            enter(element)
        case .text(let content):
            guard !gatherings.isEmpty else { return }
            let text = String(cString: content)
            var cleaned: CleanText?
            for index in gatherings.indices {
                if gatherings[index].raw != nil {
                    gatherings[index].raw! += text
                } else if !gatherings[index].clean.isFull {
                    // The piece is cleaned once, as far as any value can use it.
                    if cleaned == nil {
                        var piece = CleanText(limit: WebMarkupReader.maximumText)
                        piece.append(text)
                        cleaned = piece
                    }
                    gatherings[index].clean.append(cleaned!, leadingSpace: text.first?.isWhitespace == true,
                                                   trailingSpace: text.last?.isWhitespace == true)
                }
            }
        case .exit(let element):
            if let last = scopes.last, last.node == element.node { scopes.removeLast() }
            while let last = gatherings.last, last.node == element.node {
                gatherings.removeLast()
                finish(last)
            }
        }
    }

    private mutating func enter(_ element: HTMLElement) {
        let name = element.name
        switch name {
        case "title":
            if markup.htmlTitle == nil, !gatherings.contains(where: { if case .title = $0.target { true } else { false } }) {
                gatherings.append(Gathering(node: element.node, target: .title))
            }
        case "link":
            let rel = (element.attribute("rel") ?? "").lowercased().split(whereSeparator: \.isWhitespace)
            if rel.contains("canonical"), markup.canonicalURL == nil, let href = element.attribute("href") {
                markup.canonicalURL = WebMarkupReader.absolute(href, source: "canonical", kind: .web, linkSchemes: linkSchemes,
                                                               &markup.problems)
            }
        case "meta":
            WebMarkupReader.readMeta(element, linkSchemes: linkSchemes, into: &markup)
        case "script":
            let type = (element.attribute("type") ?? "").lowercased().trimmingCharacters(in: .whitespaces)
            if type == "application/ld+json" {
                jsonLDBlocks += 1
                if jsonLDBlocks <= WebMarkupReader.maximumThings {
                    var gathering = Gathering(node: element.node, target: .jsonLD(block: jsonLDBlocks))
                    gathering.raw = ""
                    gatherings.append(gathering)
                }
            }
        default:
            break
        }
        readMicrodata(element, name: name)
    }

    // MARK: - Microdata

    private mutating func readMicrodata(_ element: HTMLElement, name: String) {
        let enclosing = scopes.last
        if let property = element.attribute("itemprop")?.lowercased(), let enclosing {
            if let thing = enclosing.thing {
                switch property {
                case "name": claim(.name, of: thing, element, name, source: "microdata name")
                case "description": claim(.description, of: thing, element, name, source: "microdata description")
                case "image": claim(.image, of: thing, element, name, source: "microdata image")
                default: break
                }
            } else if let owner = enclosing.owner {
                switch (owner.property, property) {
                case ("aggregaterating", "ratingvalue"):
                    claim(.ratingValue, of: owner.thing, element, name, source: "microdata ratingValue")
                case ("aggregaterating", "ratingcount"), ("aggregaterating", "reviewcount"):
                    claim(.ratingCount, of: owner.thing, element, name, source: "microdata \(property)")
                case ("offers", "price"): claim(.price, of: owner.thing, element, name, source: "microdata price")
                case ("offers", "pricecurrency"): claim(.priceCurrency, of: owner.thing, element, name, source: "microdata priceCurrency")
                case ("potentialaction", "target"):
                    claim(.actionTarget, of: owner.thing, element, name, source: "microdata potentialAction target")
                default: break
                }
            }
        }
        guard element.has("itemscope") else { return }
        if enclosing == nil, microdata.count < WebMarkupReader.maximumThings, let type = element.attribute("itemtype"),
           type.contains("schema.org") {
            microdata.append(WebMarkup.Thing(source: "microdata", type: type.split(separator: "/").last.map(String.init)))
            claimed.append([])
            scopes.append(Scope(node: element.node, thing: microdata.count - 1, owner: nil))
            return
        }
        let owner = enclosing?.thing.flatMap { thing in
            element.attribute("itemprop").map { (thing: thing, property: $0.lowercased()) }
        }
        scopes.append(Scope(node: element.node, thing: nil, owner: owner))
    }

    /// Takes `field` of item `thing` from `element`, unless an earlier
    /// element took it: at once from an attribute, else from its text.
    private mutating func claim(_ field: Field, of thing: Int, _ element: HTMLElement, _ name: String, source: String) {
        guard !claimed[thing].contains(field) else { return }
        claimed[thing].insert(field)
        let attribute: String? = switch name {
        case "meta": "content"
        case "img", "audio", "video", "source", "embed", "iframe": "src"
        case "a", "area", "link": "href"
        case "object": "data"
        case "data", "meter": "value"
        case "time": "datetime"
        default: nil
        }
        if let value = attribute.flatMap(element.attribute) ?? element.attribute("content") {
            set(field, of: thing, to: value, source: source)
        } else {
            gatherings.append(Gathering(node: element.node, target: .field(thing: thing, field, source: source)))
        }
    }

    private mutating func set(_ field: Field, of thing: Int, to raw: String, source: String) {
        let value = WebMarkupReader.clean(raw)
        switch field {
        case .name: microdata[thing].name = value
        case .description: microdata[thing].description = value
        case .image:
            microdata[thing].image = WebMarkupReader.absolute(raw, source: source, kind: .web, linkSchemes: linkSchemes,
                                                              &markup.problems)
        case .ratingValue:
            microdata[thing].ratingValue = WebMarkupReader.number(.string(value), source: source, &markup.problems)
        case .ratingCount:
            microdata[thing].ratingCount = WebMarkupReader.number(.string(value), source: source, &markup.problems)
                .flatMap { Int(exactly: $0.rounded()) }
        case .price: microdata[thing].price = value
        case .priceCurrency: microdata[thing].priceCurrency = value
        case .actionTarget:
            microdata[thing].actionTarget = WebMarkupReader.absolute(raw, source: source, kind: .deepLink, linkSchemes: linkSchemes,
                                                                     &markup.problems)
        }
    }

    private mutating func finish(_ gathering: Gathering) {
        switch gathering.target {
        case .title:
            markup.htmlTitle = gathering.clean.text
        case .jsonLD(let block):
            ldThings += WebMarkupReader.things(inJSONLD: gathering.raw ?? "", block: block, linkSchemes: linkSchemes, &markup.problems)
        case .field(let thing, let field, let source):
            set(field, of: thing, to: gathering.clean.text, source: source)
        }
    }

    /// The markup read, once the walk is done.
    func finish() -> WebMarkup {
        var markup = markup
        markup.things = ldThings + microdata
        if deepest >= HTMLDocument.deepestElement {
            markup.problems.append(.init(source: "page", message: """
                elements nest \(deepest) deep, as deep as libxml2 reads a page: markup nested deeper, if any, is not read
                """))
        }
        return markup
    }
}
