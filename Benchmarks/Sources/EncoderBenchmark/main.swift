import CodecHEIF
import CodecPNG
import CodecWebP
import Foundation
import PipelineCore

// Writes our encoders' files for Benchmarks/encoders-webp-avif.sh:
//   EncoderBenchmark webp|avif|heic [--quality Q] [--effort E] [--lossless] --out-dir DIR IN.png...
// Each IN.png is decoded at full size with PNGDecoder and written as DIR/<stem>.<ext>.
// Prints one line per file: "<stem> <bytes> <encode ms>".

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("EncoderBenchmark: \(message)\n".utf8))
    exit(2)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let formatName = arguments.first else {
    fail("usage: EncoderBenchmark webp|avif|heic [--quality Q] [--effort E] [--lossless] --out-dir DIR IN.png...")
}
arguments.removeFirst()
let encoder: any ImageEncoding
switch formatName {
case "webp": encoder = WebPEncoder()
case "avif": encoder = HEIFEncoder.avif
case "heic": encoder = HEIFEncoder.heic
default: fail("unknown format \(formatName)")
}
var options = EncodeOptions()
var outDirectory: URL?
var inputs: [URL] = []
while !arguments.isEmpty {
    let argument = arguments.removeFirst()
    func value() -> String {
        guard !arguments.isEmpty else { fail("\(argument) needs a value") }
        return arguments.removeFirst()
    }
    switch argument {
    case "--quality": options.quality = Int(value()) ?? -1
    case "--effort": options.effort = Int(value()) ?? -1
    case "--lossless": options.lossless = true
    case "--out-dir": outDirectory = URL(fileURLWithPath: value())
    default: inputs.append(URL(fileURLWithPath: argument))
    }
}
guard let outDirectory else { fail("--out-dir is required") }

for input in inputs {
    do {
        let bitmap = try PNGDecoder().decode(try Data(contentsOf: input), options: DecodeOptions()).bitmap
        let start = ContinuousClock.now
        let data = try encoder.encode(bitmap, options: options)
        let elapsed = ContinuousClock.now - start
        let stem = input.deletingPathExtension().lastPathComponent
        try data.write(to: outDirectory.appendingPathComponent("\(stem).\(formatName)"))
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        print(stem, data.count, String(format: "%.1f", milliseconds))
    } catch {
        fail("\(input.path): \(error)")
    }
}
