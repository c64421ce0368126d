// Fetches N files from a local server with HTTPDataLoader and with a URLSession loader, all
// requests submitted at once (the loaders queue them under their per-host limit), and prints
// throughput. Started by Benchmarks/http.sh, which also times curl against the same server.
//
// Usage: HTTPBenchmark <base-url> <count> [connections-per-host] [rounds]
//   fetches <base-url>/0000.jpg … <base-url>/<count-1>.jpg
// Environment: BENCH_CA=<pem> trusts that CA (HTTPDataLoader; URLSession reads
// URLSessionCertificateAuthorityInfoFile), BENCH_ONLY=curl|urlsession runs one loader.
import Foundation
import LoaderHTTP
import PipelineCore

/// Prints `line` at once (unbuffered), so results reach a pipe even if a later step fails.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, let base = URL(string: arguments[1]), let count = Int(arguments[2]) else {
    say("usage: HTTPBenchmark <base-url> <count> [connections-per-host] [rounds]")
    exit(2)
}
let perHost = arguments.count > 3 ? Int(arguments[3]) ?? 6 : 6
let rounds = arguments.count > 4 ? Int(arguments[4]) ?? 5 : 5
let urls = (0..<count).map { base.appendingPathComponent(String(format: "%04d.jpg", $0)) }

/// Loads every URL at once through `loader`; returns (seconds, bytes).
func fetchAll(with loader: any DataLoading) async throws -> (Double, Int) {
    let start = DispatchTime.now().uptimeNanoseconds
    let bytes = try await withThrowingTaskGroup(of: Int.self) { group in
        for url in urls {
            group.addTask {
                guard case .data(let data, _) = try await loader.load(DataLoadRequest(url: url)) else { return 0 }
                return data.count
            }
        }
        return try await group.reduce(0, +)
    }
    return (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, bytes)
}

func report(_ name: String, _ loader: any DataLoading) async throws -> Double {
    _ = try await fetchAll(with: loader)  // warm-up: connections, DNS, page cache
    var times: [Double] = []
    var bytes = 0
    for _ in 0..<rounds {
        let (seconds, received) = try await fetchAll(with: loader)
        times.append(seconds)
        bytes = received
    }
    let median = times.sorted()[times.count / 2]
    let line = String(format: "%-24@ %5d files  %7.1f MB  median %7.1f ms  %8.0f files/s  %7.1f MB/s",
                      name as NSString, count, Double(bytes) / 1e6, median * 1000, Double(count) / median,
                      Double(bytes) / 1e6 / median)
    say(line)
    return Double(count) / median
}

let only = ProcessInfo.processInfo.environment["BENCH_ONLY"]
let curlRate = only == "urlsession" ? nil
    : try await report("HTTPDataLoader (curl)", HTTPDataLoader(configuration: .init(
        maxConnectionsPerHost: perHost, caBundlePath: ProcessInfo.processInfo.environment["BENCH_CA"])))
let sessionRate = only == "curl" ? nil : try await report("URLSession", URLSessionDataLoader(maxConnectionsPerHost: perHost))
if let curlRate, let sessionRate {
    say(String(format: "HTTPDataLoader / URLSession throughput: %.2f×", curlRate / sessionRate))
}
