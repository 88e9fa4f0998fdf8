// Fuzz target event-decoder: IndexModel's binary event codec, as a store reads
// journal payloads from a file someone could have edited.
//
// The first byte chooses the decoder (0 `EventCodec.decode`, 1 `decodeAttributes`,
// 2 `decodeActivity`, by its value mod 3); the rest is the encoding. Decoding is
// canonical (`Journal/FORMAT.md`): whatever decodes must re-encode to exactly
// the bytes it came from, and print as JSON.
import Foundation
import IndexModel

enum Target {
    static func run(_ bytes: [UInt8]) {
        guard let selector = bytes.first else { return }
        let encoding = Array(bytes.dropFirst())
        switch selector % 3 {
        case 0:
            guard let event = try? EventCodec.decode(encoding) else { return }
            contract(EventCodec.encode(event) == encoding, "a decoded event re-encodes to other bytes")
            _ = JSONWriter.compact(event.jsonValue)
        case 1:
            guard let attributes = try? EventCodec.decodeAttributes(encoding) else { return }
            contract(EventCodec.encode(attributes) == encoding, "decoded attributes re-encode to other bytes")
        default:
            guard let activity = try? EventCodec.decodeActivity(encoding) else { return }
            contract(EventCodec.encode(activity) == encoding, "a decoded activity re-encodes to other bytes")
        }
    }

    /// The events of the format's fixtures (`Journal/fixtures/`), each behind
    /// selector 0, and the attribute sets and activities inside them behind 1 and 2.
    static func seeds() throws -> [(String, [UInt8])] {
        let root = ProcessInfo.processInfo.environment["SIGHTLINE_ROOT"] ?? FileManager.default.currentDirectoryPath
        var seeds: [(String, [UInt8])] = []
        for version in 1...Int(JournalEvent.formatVersion) {
            let fixture = try [UInt8](Data(contentsOf: URL(fileURLWithPath: root + "/Journal/fixtures/events-v\(version).bin")))
            var reader = BinaryReader(fixture)
            while !reader.isAtEnd {
                let length = Int(try reader.uvarint())
                let encoding = try reader.fixedBytes(length, "event")
                let event = try EventCodec.decode(encoding)
                seeds.append(("event-\(seeds.count)-\(event.kind)", [0] + encoding))
                switch event {
                case .itemIndexed(_, let item) where seeds.count < 40:
                    seeds.append(("attributes-\(seeds.count)", [1] + EventCodec.encode(item.attributes)))
                case .activityRecorded(let activity):
                    seeds.append(("activity-\(seeds.count)", [2] + EventCodec.encode(activity)))
                default:
                    break
                }
            }
        }
        return seeds
    }
}
