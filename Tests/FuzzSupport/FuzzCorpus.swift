import CodecHEIF
import Foundation
import PipelineTestSupport

/// One corpus file the fuzzer starts from.
public struct CorpusFile: Sendable {
    /// A file of this name and these bytes.
    public init(name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
    }

    /// Its path relative to the corpus root: `png-suite/png/basn0g01.png`.
    public let name: String
    /// Its bytes.
    public let bytes: [UInt8]
}

/// The real files of `../shared/corpus`, per format, in a fixed order (so a case number names
/// the same input on every machine with the same corpus).
public enum FuzzCorpus {
    /// The corpus root (``PipelineTestSupport/Corpus/root``).
    public static var root: URL { Corpus.root }

    /// Whether the corpus is there.
    public static var isPresent: Bool { FileManager.default.fileExists(atPath: root.path) }

    /// Where each format's files are, and which extensions count.
    static func sources(_ format: FuzzFormat) -> [(folder: String, extensions: Set<String>)] {
        switch format {
        case .jpeg: return [("jpeg", ["jpg"]), ("exif-orientation", ["jpg"]), ("icc", ["jpg"])]
        case .png: return [("png-suite/png", ["png"]), ("icc", ["png"]), ("webp", ["png"])]
        case .webp: return [("webp", ["webp"]), ("webp-animated", ["webp"]), ("icc", ["webp"])]
        case .heif: return [("heif", ["heic", "heif"]), ("icc", ["heic"])]
        case .avif: return [("heif", ["avif"])]
        }
    }

    /// The seeds of `format` no larger than `maxBytes`, sorted by name. `icc/*.srgb.png`
    /// (reference renderings) are left out: they are plain PNGs like the others.
    public static func seeds(_ format: FuzzFormat, maxBytes: Int = Int.max) -> [CorpusFile] {
        var seeds: [CorpusFile] = []
        for (folder, extensions) in sources(format) {
            let directory = root.appendingPathComponent(folder)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { continue }
            for name in names.sorted() where extensions.contains((name as NSString).pathExtension.lowercased()) {
                guard !name.hasSuffix(".srgb.png") else { continue }
                let url = directory.appendingPathComponent(name)
                guard let data = try? Data(contentsOf: url), data.count <= maxBytes else { continue }
                seeds.append(CorpusFile(name: "\(folder)/\(name)", bytes: [UInt8](data)))
            }
        }
        return seeds
    }
}

/// One fuzz case: which seed, which mutation seed, and the mutated bytes.
public struct FuzzCase: Sendable {
    /// The format.
    public let format: FuzzFormat
    /// The corpus file mutated.
    public let seedName: String
    /// The mutation seed (`Mutator.mutate(…, seed:)`).
    public let mutationSeed: UInt64
    /// What was done, one step a line.
    public let steps: [String]
    /// The mutated input.
    public let bytes: [UInt8]

    /// Case `index` of run `runSeed` over `seeds`: the seed file and mutation seed both follow
    /// from (run seed, format, index), so the case can be made again from its name.
    public init(format: FuzzFormat, index: UInt64, runSeed: UInt64, seeds: [CorpusFile]) {
        var rng = SeededGenerator(seed: runSeed ^ (index &* 0x9E37_79B9_7F4A_7C15) ^ UInt64(FuzzFormat.allCases.firstIndex(of: format) ?? 0) << 56)
        let mutationSeed = rng.next()
        let pick = Int(rng.next() % UInt64(max(1, seeds.count)))
        let seed = seeds.indices.contains(pick) ? seeds[pick] : CorpusFile(name: "(no corpus file)", bytes: [])
        self.init(format: format, seed: seed, mutationSeed: mutationSeed)
    }

    /// The mutation of `seed` by `mutationSeed`.
    public init(format: FuzzFormat, seed: CorpusFile, mutationSeed: UInt64) {
        self.format = format
        self.seedName = seed.name
        self.mutationSeed = mutationSeed
        (bytes, steps) = Mutator.mutate(seed.bytes, format: format, seed: mutationSeed)
    }

    /// `webp webp/test.webp 0x1234…: VP8X.canvasWidth-1 = 16383; truncate to 200 bytes`: enough to
    /// make the case again (`ImageFuzz --case webp:webp/test.webp:0x1234…`).
    public var name: String {
        "\(format.rawValue):\(seedName):0x\(String(mutationSeed, radix: 16)) [\(steps.joined(separator: "; "))]"
    }

    /// The `--case` argument that makes this case again.
    public var reproduction: String { "\(format.rawValue):\(seedName):0x\(String(mutationSeed, radix: 16))" }
}

extension FuzzCorpus {
    /// The formats this build decodes: AVIF only when libheif has an AV1 decoder here.
    public static var formats: [FuzzFormat] {
        FuzzFormat.allCases.filter { $0 != .avif || HEIFDecoder.decodesAVIF }
    }

    /// Makes case `spec` (`FORMAT:CORPUS/FILE:0xSEED`, as ``FuzzCase/reproduction`` writes it)
    /// again; `nil` when the spec or the file is wrong.
    public static func reproduce(_ spec: String) -> FuzzCase? {
        let parts = spec.split(separator: ":", maxSplits: 2).map(String.init)
        guard parts.count == 3, let format = FuzzFormat(rawValue: parts[0]),
              let seed = UInt64(parts[2].hasPrefix("0x") ? String(parts[2].dropFirst(2)) : parts[2], radix: 16),
              let data = try? Data(contentsOf: root.appendingPathComponent(parts[1])) else { return nil }
        return FuzzCase(format: format, seed: CorpusFile(name: parts[1], bytes: [UInt8](data)), mutationSeed: seed)
    }
}
