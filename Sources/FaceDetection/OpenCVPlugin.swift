import CFaceDetectionABI
import PipelineCore
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

/// The `FaceDetectionOpenCV` plugin (`CFaceDetectionShim` built as a shared library, linking
/// OpenCV), opened at the first face search so that a process that never looks for faces never
/// maps OpenCV, as libvips loads its heavy loaders as modules on first use.
///
/// Looked for, first found wins: the file named by ``FaceDetector/pluginEnvironmentKey``, then
/// the folder of the running executable, then the folder of the binary that holds this code
/// (`dladdr`). Opened once per file (`RTLD_NOW | RTLD_LOCAL`: every symbol resolved now, none
/// visible to later libraries) and never closed: classifiers live as long as the process may.
struct OpenCVPlugin: Sendable {
    /// `libFaceDetectionOpenCV.so` (`.dylib` on Darwin): SwiftPM's name for the product.
    #if canImport(Darwin)
        static let fileName = "libFaceDetectionOpenCV.dylib"
    #else
        static let fileName = "libFaceDetectionOpenCV.so"
    #endif

    typealias Create = @convention(c) (
        UnsafePointer<CChar>?, UnsafeMutablePointer<OpaquePointer?>?, UnsafeMutablePointer<CChar>?, Int
    ) -> Int32
    typealias Free = @convention(c) (OpaquePointer?) -> Void
    typealias Detect = @convention(c) (
        OpaquePointer?, UnsafePointer<UInt8>?, Int32, Int32, Int, Double, Int32, Int32,
        UnsafeMutablePointer<UnsafeMutablePointer<faceshim_box>?>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<CChar>?, Int
    ) -> Int32
    typealias FreeBoxes = @convention(c) (UnsafeMutablePointer<faceshim_box>?) -> Void

    /// `faceshim_detector_create` and the others of `face_shim.h`, as the plugin exports them.
    let create: Create
    let free: Free
    let detect: Detect
    let freeBoxes: FreeBoxes

    /// The plugins opened so far, by path: `dlopen` of the same file again would only count up.
    private static let opened = Mutex<[String: OpenCVPlugin]>([:])

    /// The plugin from the first place of ``candidates()`` that holds the file.
    static func load(for cascade: URL) throws(FaceDetectionError) -> OpenCVPlugin {
        let places = candidates()
        guard let path = places.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw FaceDetectionError(
                .missingPlugin, cascade,
                "face detection needs its OpenCV plugin \(fileName), which is not in \(places.joined(separator: ", ")): "
                    + "build it beside the executable with `swift build --product FaceDetectionOpenCV` (add `-c release` "
                    + "for a release build), or name it in \(FaceDetector.pluginEnvironmentKey)")
        }
        return try opened.withLock { (plugins: inout [String: OpenCVPlugin]) throws(FaceDetectionError) -> OpenCVPlugin in
            if let plugin = plugins[path] { return plugin }
            let plugin = try open(path, cascade: cascade)
            plugins[path] = plugin
            return plugin
        }
    }

    /// Where the plugin is looked for, in order.
    static func candidates() -> [String] {
        var places: [String] = []
        if let named = ProcessInfo.processInfo.environment[FaceDetector.pluginEnvironmentKey], !named.isEmpty {
            places.append(named)
        }
        var folders: [String] = []
        #if os(Linux)
            if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
                folders.append(PathText.deletingLastComponent(exe))
            }
        #else
            if let exe = Bundle.main.executableURL { folders.append(exe.deletingLastPathComponent().path) }
        #endif
        if let image = imageHoldingThisCode() { folders.append(PathText.deletingLastComponent(image)) }
        for folder in folders {
            let path = PathText.appending(folder, fileName)
            if !places.contains(path) { places.append(path) }
        }
        return places
    }

    /// The file of the executable or shared library that holds this code: `dladdr` of
    /// `#dsohandle`, which Glibc declares only under `_GNU_SOURCE`, so on Linux the mapping of
    /// `/proc/self/maps` (`start-end perms offset dev inode path`) that contains it.
    private static func imageHoldingThisCode() -> String? {
        #if os(Linux)
            let address = UInt(bitPattern: #dsohandle)
            // Read to its end: the file reports a size of 0, and a read by size stops early.
            guard let bytes = readWholeFile("/proc/self/maps") else { return nil }
            let maps = String(decoding: bytes, as: UTF8.self)
            for line in maps.split(separator: "\n") {
                let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
                guard fields.count == 6, fields[5].hasPrefix("/") else { continue }
                let range = fields[0].split(separator: "-")
                guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16) else { continue }
                if start <= address && address < end { return String(fields[5]) }
            }
            return nil
        #else
            var info = Dl_info()
            guard dladdr(#dsohandle, &info) != 0, let name = info.dli_fname else { return nil }
            return String(cString: name)
        #endif
    }

    private static func open(_ path: String, cascade: URL) throws(FaceDetectionError) -> OpenCVPlugin {
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            throw FaceDetectionError(
                .missingPlugin, cascade,
                "face detection's OpenCV plugin \(path) did not load (\(lastError())): is OpenCV installed "
                    + "(Debian's libopencv-objdetect)? Rebuild it with `swift build --product FaceDetectionOpenCV`")
        }
        func symbol<Function>(_ name: String, as _: Function.Type) throws(FaceDetectionError) -> Function {
            guard let address = dlsym(handle, name) else {
                let reason = lastError()
                dlclose(handle)  // not kept: nothing of it is in use
                throw FaceDetectionError(
                    .missingPlugin, cascade,
                    "\(path) has no \(name) (\(reason)): it is not this version's FaceDetectionOpenCV; rebuild it "
                        + "with `swift build --product FaceDetectionOpenCV`")
            }
            return unsafeBitCast(address, to: Function.self)
        }
        return OpenCVPlugin(create: try symbol("faceshim_detector_create", as: Create.self),
                            free: try symbol("faceshim_detector_free", as: Free.self),
                            detect: try symbol("faceshim_detect", as: Detect.self),
                            freeBoxes: try symbol("faceshim_boxes_free", as: FreeBoxes.self))
    }

    private static func lastError() -> String {
        guard let text = dlerror() else { return "no reason given" }
        return String(cString: text)
    }
}
