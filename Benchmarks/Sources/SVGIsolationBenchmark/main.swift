// SVGIsolationBenchmark MODE FILE RUNS [WORKER]: what the SVG worker process costs beside a
// decode in this process (Benchmarks/svg-isolation.sh). MODE `in-process` or `worker` (then
// WORKER is the svg-worker executable). Each run is what a thumbnail does: the document parsed
// (its info), then drawn fitted in 64 × 64, and drawn again at its natural size. Prints the
// best milliseconds of RUNS for each, and the peak resident memory of this process in KiB (a
// worker's own peak is measured apart by the driver: a spawned child's ru_maxrss starts from its
// parent's resident size on Linux).
import CodecSVG
import Foundation
import PipelineCore

let arguments = CommandLine.arguments
guard arguments.count >= 4, let runs = Int(arguments[3]), arguments[1] == "in-process" || arguments.count == 5 else {
    FileHandle.standardError.write(Data("usage: SVGIsolationBenchmark in-process|worker FILE RUNS [WORKER]\n".utf8))
    exit(2)
}
let data = try Data(contentsOf: URL(fileURLWithPath: arguments[2]))
let decoder = arguments[1] == "worker"
    ? SVGDecoder(isolation: .worker(SVGWorker(executable: arguments[4])))
    : SVGDecoder()

/// The best wall-clock milliseconds of `runs` calls of `body`.
func best(_ body: () throws -> Void) rethrows -> Double {
    var fastest = Double.infinity
    for _ in 0..<runs {
        let start = ContinuousClock.now
        try body()
        let elapsed = ContinuousClock.now - start
        fastest = min(fastest, Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
    }
    return fastest
}

func peakKiB(_ who: Int32) -> Int {
    var usage = rusage()
    getrusage(who, &usage)
    return usage.ru_maxrss
}

let thumbnail = try best {
    _ = try decoder.withSession(for: data) { session in
        try session.decodeChecked(DecodeOptions(targetSize: PixelSize(width: 64, height: 64)))
    }
}
let natural = try best { _ = try decoder.decode(data, options: DecodeOptions()) }
print(String(format: "%.2f %.2f %d", thumbnail, natural, peakKiB(RUSAGE_SELF.rawValue)))
