import CProcessSpawn
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The worker process's side of `SVGWorkerWire`: one document from stdin, parsed and drawn in
/// this process under the limits the parent sent. What it cannot survive (a librsvg panic, a
/// limit) ends the process, which the parent reports.
enum SVGWorkerServer {
    /// Serves one document and returns the exit status (0 when the parent got its answers).
    static func run() -> Int32 {
        // Dies with the parent, so a worker whose parent crashed does not draw on for hours.
        guard process_die_with_parent() == 0 else { return 3 }
        do {
            try SVGDocument.loadLibrary()  // its libraries' data is part of the baseline
            guard let header = readMessage(.open) else { return 4 }
            var reader = SVGWorkerWire.Reader(header)
            let allowance = Int(clamping: reader.read(UInt64.self))
            let cpuSeconds = Int(reader.read(UInt32.self))
            let length = Int(clamping: reader.read(UInt64.self))
            guard length <= SVGWorkerWire.maxDocumentLength else { return 4 }
            var limit = limitResources(memory: allowance + length, cpuSeconds: cpuSeconds)
            var data = Data(count: length)
            let complete = data.withUnsafeMutableBytes { readFully(0, into: $0) }
            guard complete else { return 4 }
            let document: SVGDocument
            do {
                document = try SVGDocument(data, defaultSize: SVGDecoder.defaultSize)
            } catch {
                return answer(failure: error)
            }
            data = Data()
            var size = SVGWorkerWire.Writer(.size)
            size.append(document.naturalWidth)
            size.append(document.naturalHeight)
            size.append(UInt8(document.sizeSource == .intrinsic ? 0 : document.sizeSource == .viewBox ? 1 : 2))
            guard writeFully(1, size.bytes) else { return 5 }
            guard let draw = readMessage(.draw) else { return 0 }  // the parent wanted the size only
            var request = SVGWorkerWire.Reader(draw)
            let canvas = PixelSize(width: Int(request.read(UInt32.self)), height: Int(request.read(UInt32.self)))
            guard let format = SVGWorkerWire.pixelFormat(request.read(UInt8.self)) else { return 4 }
            limit = limit.raised(by: Int(clamping: request.read(UInt64.self)))
            let bitmap: Bitmap
            do {
                bitmap = try document.render(canvas, pixelFormat: format)
            } catch {
                return answer(failure: error)
            }
            var head = SVGWorkerWire.Writer(.bitmap)
            head.append(UInt32(bitmap.width))
            head.append(UInt32(bitmap.height))
            head.append(SVGWorkerWire.code(format))
            guard writeFully(1, head.bytes), bitmap.withUnsafeBytes({ writeFully(1, UnsafeRawBufferPointer($0)) }) else { return 5 }
            return 0
        } catch {
            return answer(failure: error)
        }
    }

    /// Writes `error` as a `SVGWorkerWire/Kind/failure` answer; returns 0 (an answer was given).
    private static func answer(failure error: any Error) -> Int32 {
        var kind = SVGWorkerWire.FailureKind.corrupt, message = "\(error)"
        if case ImagePipelineError.corruptData(_, let text) = error { message = text }
        if case ImagePipelineError.unsupported(_, let text) = error { (kind, message) = (.unsupported, text) }
        let text = Array(message.utf8.prefix(SVGWorkerWire.maxMessageLength))
        var failure = SVGWorkerWire.Writer(.failure)
        failure.append(kind.rawValue)
        failure.append(UInt32(text.count))
        return writeFully(1, failure.bytes + text) ? 0 : 5
    }

    /// The data-segment limit this worker set on itself.
    struct MemoryLimit {
        let soft: Int

        /// The limit raised by `bytes` (a drawing's memory).
        func raised(by bytes: Int) -> MemoryLimit {
            let soft = self.soft.addingReportingOverflow(bytes)
            return MemoryLimit.set(soft.overflow ? Int.max : soft.partialValue)
        }

        static func set(_ soft: Int) -> MemoryLimit {
            #if os(Linux)
            var limit = rlimit()
            if getrlimit(Int32(RLIMIT_DATA.rawValue), &limit) == 0 {
                limit.rlim_cur = min(rlim_t(max(0, soft)), limit.rlim_max)  // RLIM_INFINITY is the largest value
                _ = setrlimit(Int32(RLIMIT_DATA.rawValue), &limit)
            }
            #endif
            return MemoryLimit(soft: soft)
        }
    }

    /// Limits this process's data segment to what it holds now plus `memory` bytes, and its CPU
    /// time to `cpuSeconds` (`SIGXCPU`, then `SIGKILL` a second later).
    private static func limitResources(memory: Int, cpuSeconds: Int) -> MemoryLimit {
        #if os(Linux)
        var cpu = rlimit(rlim_cur: rlim_t(max(1, cpuSeconds)), rlim_max: rlim_t(max(1, cpuSeconds) + 1))
        _ = setrlimit(Int32(RLIMIT_CPU.rawValue), &cpu)
        #endif
        let (total, overflow) = dataSegmentBytes().addingReportingOverflow(memory)
        return MemoryLimit.set(overflow ? Int.max : total)
    }

    /// The process's data segment now (`/proc/self/statm`'s data field), 0 where unknown.
    private static func dataSegmentBytes() -> Int {
        #if os(Linux)
        let descriptor = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return 0 }
        let fields = String(decoding: buffer[..<count], as: UTF8.self).split(separator: " ")
        guard fields.count > 5, let pages = Int(fields[5]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
        #else
        return 0
        #endif
    }

    /// Reads one message of `kind` from stdin: its body, or `nil` at end of input or on anything else.
    private static func readMessage(_ kind: SVGWorkerWire.Kind) -> [UInt8]? {
        var head = [UInt8](repeating: 0, count: 5 + SVGWorkerWire.bodyLength(kind))
        guard head.withUnsafeMutableBytes({ readFully(0, into: $0) }),
              Array(head[0..<4]) == SVGWorkerWire.magic, head[4] == kind.rawValue else { return nil }
        return Array(head[5...])
    }

    /// Fills `buffer` from `descriptor`; `false` at end of input or on an error.
    private static func readFully(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Bool {
        fully(buffer.count) { done in read(descriptor, buffer.baseAddress.map { $0 + done }, buffer.count - done) }
    }

    private static func writeFully(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { writeFully(descriptor, $0) }
    }

    /// Writes all of `buffer` to `descriptor`; `false` on an error.
    private static func writeFully(_ descriptor: Int32, _ buffer: UnsafeRawBufferPointer) -> Bool {
        fully(buffer.count) { done in write(descriptor, buffer.baseAddress.map { $0 + done }, buffer.count - done) }
    }

    /// Calls `step` with the bytes done so far until `count` are (retrying on `EINTR`); `false`
    /// when a step moves nothing (end of input) or fails.
    private static func fully(_ count: Int, _ step: (Int) -> Int) -> Bool {
        var done = 0
        while done < count {
            let moved = step(done)
            if moved > 0 {
                done += moved
            } else if moved == 0 || errno != EINTR {
                return false
            }
        }
        return true
    }
}
