/// Text for an HTML page the project writes (`report.html`, the cloud's
/// status page, the inspector): `&`, `<`, `>`, `"` and `'` become character
/// references, so that no value from a store or a request can become
/// markup or leave the attribute it is in.
public enum HTMLText {
    public static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
