import CLibXML2

/// An HTML document as libxml2's HTML parser reads it, in recovery mode:
/// unclosed tags, several `<head>` elements and markup in `<body>` are read
/// the way browsers read them. Nothing is fetched (`HTML_PARSE_NONET`).
///
/// The nodes this hands out live as long as the document.
final class HTMLDocument {
    private let document: htmlDocPtr

    /// Parses `bytes`; libxml2 honours the charset the page declares.
    init?(_ bytes: [UInt8]) {
        let options = Int32(HTML_PARSE_RECOVER.rawValue | HTML_PARSE_NOERROR.rawValue | HTML_PARSE_NOWARNING.rawValue
                            | HTML_PARSE_NONET.rawValue | HTML_PARSE_NOBLANKS.rawValue)
        guard bytes.count <= Int(Int32.max) else { return nil }
        let parsed = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.flatMap { base in
                base.withMemoryRebound(to: CChar.self, capacity: buffer.count) { characters in
                    htmlReadMemory(characters, Int32(buffer.count), nil, nil, options)
                }
            }
        }
        guard let parsed else { return nil }
        document = parsed
    }

    deinit {
        xmlFreeDoc(document)
    }

    /// One step of `walk`.
    enum Step {
        /// An element begins; `depth` is 1 for the root element.
        case enter(HTMLElement, depth: Int)
        /// A text or CDATA node's content, as libxml2 decoded it.
        case text(UnsafePointer<xmlChar>)
        /// The element's subtree is done.
        case exit(HTMLElement)
    }

    /// The deepest element libxml2's HTML parser keeps, counting the root
    /// as 1: markup nested deeper is left out of the tree.
    static let deepestElement = 257

    /// Visits every node once, in document order, by the tree's own links
    /// (no recursion and no stack, so a page nested as deep as libxml2 keeps
    /// costs nothing more): `enter` and `exit` for each element around its
    /// subtree, `text` for each text node.
    func walk(_ visit: (Step) -> Void) {
        guard let root = xmlDocGetRootElement(document) else { return }
        var node = root
        var depth = 1
        while true {
            var descended = false
            switch node.pointee.type {
            case XML_ELEMENT_NODE:
                visit(.enter(HTMLElement(node: node), depth: depth))
                if let child = node.pointee.children {
                    node = child
                    depth += 1
                    descended = true
                } else {
                    visit(.exit(HTMLElement(node: node)))
                }
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                if let content = node.pointee.content { visit(.text(content)) }
            default:
                break
            }
            if descended { continue }
            // Up to the nearest ancestor with a next sibling, leaving each
            // finished element on the way.
            while node.pointee.next == nil {
                guard node != root, let parent = node.pointee.parent else { return }
                node = parent
                depth -= 1
                visit(.exit(HTMLElement(node: node)))
                if node == root { return }
            }
            guard node != root, let next = node.pointee.next else { return }
            node = next
        }
    }
}

/// One element of an `HTMLDocument`.
struct HTMLElement {
    let node: xmlNodePtr

    /// The tag name, lowercase (libxml2's HTML parser lowercases it).
    var name: String {
        node.pointee.name.map { String(cString: $0) } ?? ""
    }

    /// The attribute's value, or nil when the element has none of that name
    /// (HTML attribute names are case-insensitive; libxml2 lowercases them).
    func attribute(_ name: String) -> String? {
        guard let value = xmlGetProp(node, name) else { return nil }
        defer { sightline_xml_free(value) }
        return String(cString: value)
    }

    /// Whether the element has an attribute of that name.
    func has(_ name: String) -> Bool {
        xmlHasProp(node, name) != nil
    }
}

/// Whether libxml2 can decode a charset of that name.
func libxml2KnowsCharset(_ name: String) -> Bool {
    guard let handler = xmlFindCharEncodingHandler(name) else { return false }
    xmlCharEncCloseFunc(handler)
    return true
}
