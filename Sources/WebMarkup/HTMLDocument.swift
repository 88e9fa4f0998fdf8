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

    /// Every element, in document order, walked with a stack (a page nested
    /// deeper than the call stack could take is still read).
    func elements() -> [HTMLElement] {
        var found: [HTMLElement] = []
        var stack: [xmlNodePtr] = []
        if let root = xmlDocGetRootElement(document) { stack.append(root) }
        while let node = stack.popLast() {
            if node.pointee.type == XML_ELEMENT_NODE { found.append(HTMLElement(node: node)) }
            var children: [xmlNodePtr] = []
            var child = node.pointee.children
            while let current = child {
                children.append(current)
                child = current.pointee.next
            }
            stack.append(contentsOf: children.reversed())
        }
        return found
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

    /// The text of the element and its descendants, as libxml2 decoded it.
    var text: String {
        guard let content = xmlNodeGetContent(node) else { return "" }
        defer { sightline_xml_free(content) }
        return String(cString: content)
    }

    /// Whether `ancestor` contains this element.
    func isInside(_ ancestor: HTMLElement) -> Bool {
        var parent = node.pointee.parent
        while let current = parent {
            if current == ancestor.node { return true }
            parent = current.pointee.parent
        }
        return false
    }

    /// The nearest enclosing element with `itemscope`, if any.
    var enclosingScope: HTMLElement? {
        var parent = node.pointee.parent
        while let current = parent, current.pointee.type == XML_ELEMENT_NODE {
            let element = HTMLElement(node: current)
            if element.attribute("itemscope") != nil { return element }
            parent = current.pointee.parent
        }
        return nil
    }
}

/// Whether libxml2 can decode a charset of that name.
func libxml2KnowsCharset(_ name: String) -> Bool {
    guard let handler = xmlFindCharEncodingHandler(name) else { return false }
    xmlCharEncCloseFunc(handler)
    return true
}
