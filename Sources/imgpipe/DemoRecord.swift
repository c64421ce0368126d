import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What one demo step did, kept in the state directory so later processes print and draw it:
/// the answers' sources, the downloads the pipeline reported and the requests the CDN saw.
struct DemoRecord: Codable {
    let step: String
    /// The process that ran it (its pid; the table numbers them 1, 2, 3…).
    let process: Int
    /// Distinct pictures asked for, and callers (more than pictures when many ask for one).
    let pictures: Int
    let callers: Int
    /// Answers per source (`ImageResponse.source`'s description: network, memory, disk…).
    let sources: [String: Int]
    /// `ImagePipelineEvent.loaded` events: downloads the loaders delivered.
    let downloads: Int
    /// Requests the CDN counted during the step; `nil` when it was stopped or counts nothing.
    let originRequests: Int?
    let originStopped: Bool
    let milliseconds: Double
    /// The step's sheet, a file name in the state directory.
    var sheet: String

    /// "10 network" or "9 disk, 1 network": the most frequent source first.
    var sourceSummary: String {
        sources.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
    }

    var originText: String {
        originStopped ? "stopped" : originRequests.map { "\($0)" } ?? "?"
    }

    /// The line on the step's sheet.
    var summary: String {
        let answers = callers > pictures ? "\(callers) callers of \(pictures) picture\(pictures == 1 ? "" : "s")" : "\(pictures) pictures"
        let origin = originStopped ? "CDN stopped" : "CDN saw \(originText) request\(originRequests == 1 ? "" : "s")"
        return "\(answers): \(sourceSummary) · \(downloads) download\(downloads == 1 ? "" : "s") · \(origin)"
    }

    /// The table's columns: name and width (a negative width is right-aligned).
    private static let columns: [(String, Int)] = [("step", 9), ("process", 7), ("callers", 7), ("answered from", 22),
                                                   ("downloads", -9), ("CDN saw", -8), ("time", -9)]

    private static func line(_ cells: [String]) -> String {
        zip(cells, columns).map { cell, column in
            let width = abs(column.1), padding = String(repeating: " ", count: max(0, width - cell.count))
            return column.1 < 0 ? padding + cell : cell + padding
        }.joined(separator: "  ")
    }

    static var tableHeader: String { line(columns.map(\.0)) }

    func tableLine(process number: Int) -> String {
        Self.line([step, "\(number)", "\(callers)", sourceSummary, "\(downloads)", originText,
                   printfFormat("%.0f ms", milliseconds)])
    }

    /// 1 for the first process in `records`, 2 for the next one…
    static func processNumber(of record: DemoRecord, in records: [DemoRecord]) -> Int {
        var seen: [Int] = []
        for other in records where !seen.contains(other.process) { seen.append(other.process) }
        return (seen.firstIndex(of: record.process) ?? seen.count) + 1
    }

    /// What is wrong with the step, or `nil` when it did what it shows. Judged by downloads and
    /// the CDN's counts, not by the source labels, which say more than these promises need.
    func brokenPromise(for step: DemoStep) -> String? {
        switch step {
        case .network:
            if downloads != pictures { return "expected \(pictures) downloads (one per picture), the pipeline made \(downloads)" }
            if let originRequests, originRequests != pictures { return "expected \(pictures) requests, the CDN saw \(originRequests)" }
        case .coalesce:
            if downloads != 1 { return "\(callers) callers of one picture should share one download, the pipeline made \(downloads)" }
            if let originRequests, originRequests != 1 { return "expected one request, the CDN saw \(originRequests)" }
        case .memory, .disk, .offline, .round:
            if downloads != 0 { return "expected no download, the pipeline made \(downloads)" }
            if let originRequests, originRequests != 0 { return "expected no request to the CDN, it saw \(originRequests)" }
        case .sheet:
            break
        }
        return nil
    }

    /// A caption colour per source, by its description (an unknown one is grey).
    static func color(for source: String) -> (UInt8, UInt8, UInt8, UInt8) {
        let colors: [String: (UInt8, UInt8, UInt8, UInt8)] = [
            "network": (240, 160, 80, 255), "memory": (120, 210, 120, 255), "processedFromMemory": (190, 230, 110, 255),
            "disk": (110, 170, 240, 255), "revalidated": (200, 150, 240, 255), "rendition": (110, 210, 220, 255),
            "local": (230, 210, 120, 255),
        ]
        return colors[source] ?? (190, 190, 195, 255)
    }
}
