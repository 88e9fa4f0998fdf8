import Foundation

/// One word of a search: matched whole, or as the start of a word.
public struct SearchWord: Hashable, Sendable {
    public var text: String
    public var isPrefix: Bool

    public init(text: String, isPrefix: Bool) {
        self.text = text
        self.isPrefix = isPrefix
    }
}

/// The words of a text as search sees them: maximal runs of letters and digits,
/// lowercased, with diacritics removed ("Café" is "cafe"), each at most
/// `maximumWordBytes` UTF-8 bytes. The same function splits what a user types and
/// what is indexed, on devices and in the cloud, so the two always agree.
public enum SearchText {
    public static let maximumWordBytes = 64

    /// What a user typed, as words to find: each whole, except the last while it
    /// is still being typed (the text does not end after it), which is a prefix.
    /// At most `limit` words count.
    public static func search(_ text: String, limit: Int) -> [SearchWord] {
        let all = self.words(in: text)
        let words = Array(all.prefix(limit))
        let finished = all.count > limit || (text.last.map { !($0.isLetter || $0.isNumber) } ?? true)
        return words.enumerated().map { index, word in
            SearchWord(text: word, isPrefix: index == words.count - 1 && !finished)
        }
    }

    public static func words(in text: String) -> [String] {
        var words: [String] = []
        var isASCII = true
        for byte in text.utf8 where byte >= 0x80 {
            isASCII = false
            break
        }
        if isASCII {
            var current: [UInt8] = []
            func finish() {
                if !current.isEmpty {
                    words.append(String(decoding: current.prefix(maximumWordBytes), as: UTF8.self))
                    current.removeAll(keepingCapacity: true)
                }
            }
            for byte in text.utf8 {
                switch byte {
                case 0x30...0x39, 0x61...0x7A: current.append(byte)
                case 0x41...0x5A: current.append(byte + 0x20)
                default: finish()
                }
            }
            finish()
            return words
        }
        var current = ""
        func finish() {
            if !current.isEmpty {
                words.append(truncated(current))
                current = ""
            }
        }
        for character in text {
            if character.isLetter || character.isNumber {
                // Lowercasing and removing diacritics, as FTS5's unicode61
                // tokenizer does, and not full case folding (ß stays ß). The
                // search index and the query split text with this one function.
                current += String(character).lowercased().folding(options: [.diacriticInsensitive], locale: nil)
            } else {
                finish()
            }
        }
        finish()
        return words
    }

    private static func truncated(_ word: String) -> String {
        guard word.utf8.count > maximumWordBytes else { return word }
        var result = ""
        for character in word {
            guard result.utf8.count + character.utf8.count <= maximumWordBytes else { break }
            result.append(character)
        }
        return result
    }
}
