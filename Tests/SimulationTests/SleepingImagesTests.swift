import Foundation
import PropertyBased
import ScratchDirectory
@testable import Simulation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The file of sleeping stores' images (`SleepingImages`): what is read back
/// is what was written, slots are written again once freed, and an image
/// changed in the file is an error, not a store woken with other pages.
@Suite struct SleepingImagesTests {
    private func image(_ count: Int, _ seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed }
    }

    @Test func anImageReadBackIsTheOneWrittenAndAFreedSlotIsWrittenAgain() throws {
        let directory = try ScratchDirectory.make("sleeping-images")
        let images = SleepingImages(directory: directory.path)
        let small = image(100, 1), middle = image(600, 2), large = image(5_000, 3)
        let places = try [small, middle, large].map { try images.write($0) }
        #expect(try places.map { try images.read($0) } == [small, middle, large])
        #expect(images.heldBytes == 5_700)
        // One granule, two, ten: laid end to end.
        #expect(places.map(\.offset) == [0, 512, 1_536] && images.fileBytes == 6_656)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty,
                "the file is unlinked as soon as it is open: nothing is left behind however the run ends")

        images.release(places[1])
        #expect(images.heldBytes == 5_100)
        let again = image(700, 4)
        let reused = try images.write(again)
        #expect(reused.offset == 512 && images.fileBytes == 6_656, "an image of as many granules takes the freed slot")
        let longer = try images.write(image(1_100, 5))
        #expect(longer.offset == 6_656, "an image of more granules goes at the end")
        #expect(try images.read(reused) == again && images.read(places[0]) == small && images.read(places[2]) == large)
        #expect(images.mostHeldBytes == 6_900)
    }

    /// Any run of writes and releases: every image reads back as written,
    /// no two images' slots overlap, the held bytes are the images' own, and
    /// the file grows only for an image no freed slot fits.
    @Test func anyRunOfWritesAndReleasesKeepsEveryImageAndReusesFreedSlots() async throws {
        let directory = try ScratchDirectory.make("sleeping-images")
        let steps = Generator<[Int], Shrink.None<[Int]>>(run: { rng in
            (0..<Int.random(in: 1...60, using: &rng)).map { _ in
                // Negative: release the live image at that position; else write that many bytes.
                Bool.random(using: &rng) ? -Int.random(in: 1...1_000, using: &rng) : Int.random(in: 1...6_000, using: &rng)
            }
        })
        await propertyCheck(count: 300, input: steps) { steps in
            let images = SleepingImages(directory: directory.path)
            var live: [(SleepingImages.Place, [UInt8])] = []
            // The model's freed slots: how many of each size in granules.
            var freed: [Int: Int] = [:]
            for (number, step) in steps.enumerated() {
                if step < 0 {
                    guard !live.isEmpty else { continue }
                    let place = live.remove(at: -step % live.count).0
                    images.release(place)
                    freed[place.granules, default: 0] += 1
                    continue
                }
                let before = images.fileBytes
                let granules = SleepingImages.granules(step)
                let image = self.image(step, UInt8(truncatingIfNeeded: number))
                let place = try images.write(image)
                if freed[granules, default: 0] > 0 {
                    freed[granules]! -= 1
                    #expect(images.fileBytes == before, "a freed slot of \(granules) granules was there to take")
                } else {
                    #expect(images.fileBytes == before + granules * SleepingImages.granule && place.offset == before)
                }
                #expect(place.offset % SleepingImages.granule == 0)
                live.append((place, image))
            }
            for (place, image) in live { #expect(try images.read(place) == image) }
            #expect(images.heldBytes == live.reduce(0) { $0 + $1.1.count })
            let slots = live.map { ($0.0.offset, $0.0.offset + $0.0.granules * SleepingImages.granule) }.sorted { $0.0 < $1.0 }
            for (left, right) in zip(slots, slots.dropFirst()) { #expect(left.1 <= right.0, "two images' slots overlap") }
        }
    }

    @Test func anImageChangedInTheFileIsAnErrorThatSaysWhereNotAStoreWithOtherPages() throws {
        let directory = try ScratchDirectory.make("sleeping-images")
        let images = SleepingImages(directory: directory.path)
        _ = try images.write(image(700, 6))
        let place = try images.write(image(3_000, 7))
        // Find the unlinked file among this process's open files, and change one byte of the second image.
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
        let ours = try #require(descriptors.first { name in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"))?
                .hasPrefix(directory.path + "/sightline-sleeping-stores-") ?? false
        })
        let writer = open("/proc/self/fd/\(ours)", O_WRONLY)
        try #require(writer >= 0)
        var byte: UInt8 = 0xFF
        #expect(pwrite(writer, &byte, 1, off_t(place.offset + 1_234)) == 1)
        close(writer)
        #expect {
            _ = try images.read(place)
        } throws: { error in
            "\(error)".contains("at offset \(place.offset)") && "\(error)".contains("not the one written there")
        }
        #expect(throws: SimulationError.self, "a place past the file's end is refused before anything is read") {
            try images.read(SleepingImages.Place(offset: images.fileBytes, count: 10, fingerprint: 0))
        }
    }
}
