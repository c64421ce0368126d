import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The server's counters, exposed in Prometheus's text format (``prometheusText()``), under
/// imgproxy's metric names where they fit so its dashboards read them: `requests_total`,
/// `status_codes_total`, `errors_total`, `request_duration_seconds`,
/// `request_span_duration_seconds`, `requests_in_progress`, `images_in_progress`,
/// `cache_hits_total` and `process_resident_memory_bytes` (what each counts: the
/// [module page's table](/documentation/imageserver#Metrics)).
public final class ServerMetrics: Sendable {
    /// A histogram's upper bounds in seconds: imgproxy's defaults.
    static let buckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private struct Histogram {
        var counts = [Int](repeating: 0, count: ServerMetrics.buckets.count)
        var count = 0
        var sum = 0.0

        mutating func observe(_ seconds: Double) {
            for (index, bound) in ServerMetrics.buckets.enumerated() where seconds <= bound { counts[index] += 1 }
            count += 1
            sum += seconds
        }
    }

    private struct State {
        var requests = 0
        var statuses: [Int: Int] = [:]
        var errors: [String: Int] = [:]
        var duration = Histogram()
        var spans: [String: Histogram] = [:]
        var inProgress = 0
        var imagesInProgress = 0
        var hits: [String: Int] = [:]
    }

    private let state = Mutex(State())
    /// Prefixed to every name (imgproxy's `IMGPROXY_PROMETHEUS_NAMESPACE`); empty by default.
    public let namespace: String

    /// Empty counters.
    public init(namespace: String = "") {
        self.namespace = namespace
    }

    func requestStarted() { state.withLock { $0.inProgress += 1; $0.requests += 1 } }

    func requestFinished(status: Int, seconds: Double, error: ServerError.Kind?) {
        state.withLock { state in
            state.inProgress -= 1
            state.statuses[status, default: 0] += 1
            state.duration.observe(seconds)
            if let error { state.errors[Self.name(of: error), default: 0] += 1 }
        }
    }

    func imageStarted() { state.withLock { $0.imagesInProgress += 1 } }
    func imageFinished() { state.withLock { $0.imagesInProgress -= 1 } }

    func span(_ name: String, seconds: Double) {
        state.withLock { $0.spans[name, default: Histogram()].observe(seconds) }
    }

    func hit(_ tier: String) { state.withLock { $0.hits[tier, default: 0] += 1 } }

    /// Requests answered with `status` so far.
    public func count(status: Int) -> Int { state.withLock { $0.statuses[status] ?? 0 } }

    /// Hits of `tier` so far (`result_memory`, `result_store`).
    public func hits(_ tier: String) -> Int { state.withLock { $0.hits[tier] ?? 0 } }

    static func name(of kind: ServerError.Kind) -> String {
        switch kind {
        case .badRequest: "bad_request"
        case .forbidden: "forbidden"
        case .notFound: "not_found"
        case .methodNotAllowed: "method_not_allowed"
        case .unprocessable: "unprocessable"
        case .tooManyRequests: "too_many_requests"
        case .internalError: "internal"
        case .badGateway: "bad_gateway"
        case .unavailable: "unavailable"
        case .timeout: "timeout"
        }
    }

    /// Every metric in Prometheus's text exposition format 0.0.4.
    public func prometheusText() -> String {
        let state = state.withLock { $0 }
        let prefix = namespace.isEmpty ? "" : namespace + "_"
        var out = ""
        func header(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(prefix)\(name) \(help)\n# TYPE \(prefix)\(name) \(type)\n"
        }
        func line(_ name: String, _ labels: String = "", _ value: String) {
            out += "\(prefix)\(name)\(labels.isEmpty ? "" : "{\(labels)}") \(value)\n"
        }
        func histogram(_ name: String, _ histogram: Histogram, label: String = "") {
            let extra = label.isEmpty ? "" : label + ","
            for (bound, count) in zip(Self.buckets, histogram.counts) {
                line(name + "_bucket", "\(extra)le=\"\(bound)\"", String(count))
            }
            line(name + "_bucket", "\(extra)le=\"+Inf\"", String(histogram.count))
            line(name + "_sum", label, String(histogram.sum))
            line(name + "_count", label, String(histogram.count))
        }
        header("requests_total", "counter", "Picture requests.")
        line("requests_total", "", String(state.requests))
        header("status_codes_total", "counter", "Responses by status code.")
        for (status, count) in state.statuses.sorted(by: { $0.key < $1.key }) {
            line("status_codes_total", "status=\"\(status)\"", String(count))
        }
        header("errors_total", "counter", "Failed requests by type.")
        for (type, count) in state.errors.sorted(by: { $0.key < $1.key }) { line("errors_total", "type=\"\(type)\"", String(count)) }
        header("request_duration_seconds", "histogram", "Time to answer a request.")
        histogram("request_duration_seconds", state.duration)
        header("request_span_duration_seconds", "histogram", "Time spent in a part of a request.")
        for (span, value) in state.spans.sorted(by: { $0.key < $1.key }) {
            histogram("request_span_duration_seconds", value, label: "span=\"\(span)\"")
        }
        header("requests_in_progress", "gauge", "Requests being answered.")
        line("requests_in_progress", "", String(state.inProgress))
        header("images_in_progress", "gauge", "Pictures being made.")
        line("images_in_progress", "", String(state.imagesInProgress))
        header("cache_hits_total", "counter", "Answers by cache tier.")
        for (tier, count) in state.hits.sorted(by: { $0.key < $1.key }) { line("cache_hits_total", "tier=\"\(tier)\"", String(count)) }
        header("process_resident_memory_bytes", "gauge", "Resident memory of the process.")
        line("process_resident_memory_bytes", "", String(Self.residentBytes()))
        return out
    }

    /// `/proc/self/statm`'s resident pages × the page size; 0 where there is none.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
