// Memory-cache lookup cost, beside peers measured in the same run:
//   MemoryCache<ImageKey, ImageContainer>  (ours: Mutex + dictionary + array-linked LRU)
//   ImagePipeline.cachedImage(for:)       (ours, the whole UI-thread call: fetch URL + key + lookup)
//   NSCache<NSString, Box>                (Foundation's cache, keyed by the URL string)
//   Mutex<[ImageKey: ImageResponse]>      (a floor: one lock and one hash lookup, no LRU)
// Run: swift run -c release MemoryCacheBenchmark [lookups per run]   (fewer, e.g. 20000, under callgrind)
import Foundation
import PipelineCore
import Synchronization

let entryCount = 10_000
let lookups = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 2_000_000

let bitmap = Bitmap(zeroed: PixelSize(width: 8, height: 8))
let response = ImageResponse(bitmap: bitmap, source: .network, originalSize: bitmap.size, format: .jpeg)
let keys: [ImageKey] = (0..<entryCount).map { i in
    ImageKey(request: ImageRequest(url: URL(string: "https://cdn.example.com/photos/\(i).jpg")!, width: 256, height: 256),
             cacheURL: URL(string: "https://cdn.example.com/photos/\(i).jpg?w=320")!)
}
// A fixed pseudo-random probe order so every cache sees the same sequence.
let order: [Int] = {
    var order = [Int](repeating: 0, count: 65_536)
    var seed: UInt64 = 0x1234_5678
    for i in order.indices {
        seed = seed &* 6364136223846793005 &+ 1442695040888963407
        order[i] = Int(seed >> 33) % entryCount
    }
    return order
}()

let runs = 5

/// The nanoseconds per hit of each of `runs` runs, sorted.
@MainActor
func measure(_ name: String, _ body: (Int) -> Bool) -> [Double] {
    var times: [Double] = []
    for _ in 0..<runs {
        var hits = 0
        let start = DispatchTime.now().uptimeNanoseconds
        for i in 0..<lookups where body(order[i & 0xFFFF]) { hits += 1 }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start)
        precondition(hits == lookups, "\(name): expected every lookup to hit")
        times.append(elapsed / Double(lookups))
    }
    return times.sorted()
}

/// One line: min and median ns per hit, and both as a multiple of `raw`'s (the cache's own hit).
func report(_ name: String, _ times: [Double], against raw: [Double]) {
    let median = times[times.count / 2], rawMedian = raw[raw.count / 2]
    print(String(format: "%-34@ min %7.1f  median %7.1f ns per hit   %5.2f× / %5.2f× the raw hit", name as NSString,
                 times[0], median, times[0] / raw[0], median / rawMedian))
}

let ours = MemoryCache<ImageKey, ImageContainer>(costLimit: 1 << 30)
for key in keys { ours.insert(response.container, for: key, cost: bitmap.cost) }
let raw = measure("MemoryCache (ours)") { ours.value(for: keys[$0]) != nil }

// The call a UI thread makes: builds the fetch URL and key, then looks up.
let pipeline = ImagePipeline(configuration: .init(decoders: DecoderRegistry(), loaders: LoaderRegistry(),
                                                  urlBuilder: WidthBucketURLBuilder(), memoryCache: ours))
let requests = (0..<entryCount).map {
    ImageRequest(url: URL(string: "https://cdn.example.com/photos/\($0).jpg")!, width: 256, height: 256)
}
let cached = measure("ImagePipeline.cachedImage(for:)") { pipeline.cachedImage(for: requests[$0]) != nil }

final class Box { let value: ImageResponse; init(_ value: ImageResponse) { self.value = value } }
let nsCache = NSCache<NSString, Box>()
let nsKeys = keys.map { NSString(string: $0.cacheURL.absoluteString + "|256x256") }
for key in nsKeys { nsCache.setObject(Box(response), forKey: key, cost: bitmap.cost) }
let ns = measure("NSCache (Foundation, string key)") { nsCache.object(forKey: nsKeys[$0]) != nil }

let floor = Mutex<[ImageKey: ImageResponse]>([:])
floor.withLock { dict in for key in keys { dict[key] = response } }
let floorTimes = measure("Mutex<Dictionary> (no LRU, floor)") { index in floor.withLock { $0[keys[index]] != nil } }

print("entries: \(entryCount), lookups per run: \(lookups), \(runs) runs each")
report("MemoryCache.value(for:) (raw hit)", raw, against: raw)
report("ImagePipeline.cachedImage(for:)", cached, against: raw)
report("NSCache (Foundation, string key)", ns, against: raw)
report("Mutex<Dictionary> (no LRU, floor)", floorTimes, against: raw)
