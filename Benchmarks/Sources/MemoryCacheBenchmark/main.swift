// Memory-cache lookup cost, beside peers measured in the same run:
//   MemoryCache<ImageKey, ImageContainer>  (ours: Mutex + dictionary + array-linked LRU)
//   ImagePipeline.cachedImage(for:)       (ours, the whole UI-thread call: fetch URL + key + lookup),
//                                         for reused request values and for a new value per call
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

/// Nanoseconds per hit of one run of `lookups` probes through `body`.
@MainActor
func run(_ name: String, _ body: (Int) -> Bool) -> Double {
    var hits = 0
    let start = DispatchTime.now().uptimeNanoseconds
    for i in 0..<lookups where body(order[i & 0xFFFF]) { hits += 1 }
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start)
    precondition(hits == lookups, "\(name): expected every lookup to hit")
    return elapsed / Double(lookups)
}

let ours = MemoryCache<ImageKey, ImageContainer>(costLimit: 1 << 30)
for key in keys { ours.insert(response.container, for: key, cost: bitmap.cost) }

// The call a UI thread makes: builds the fetch URL and key, then looks up.
let pipeline = ImagePipeline(configuration: .init(decoders: DecoderRegistry(), loaders: LoaderRegistry(),
                                                  urlBuilder: WidthBucketURLBuilder(), memoryCache: ours))
let requests = (0..<entryCount).map {
    ImageRequest(url: URL(string: "https://cdn.example.com/photos/\($0).jpg")!, width: 256, height: 256)
}
let urls = requests.map(\.url)

final class Box { let value: ImageResponse; init(_ value: ImageResponse) { self.value = value } }
let nsCache = NSCache<NSString, Box>()
let nsKeys = keys.map { NSString(string: $0.cacheURL.absoluteString + "|256x256") }
for key in nsKeys { nsCache.setObject(Box(response), forKey: key, cost: bitmap.cost) }

let floor = Mutex<[ImageKey: ImageResponse]>([:])
floor.withLock { dict in for key in keys { dict[key] = response } }

// The raw hit first: every other line is a multiple of it.
let cases: [(name: String, body: (Int) -> Bool)] = [
    ("MemoryCache.value(for:) (raw hit)", { ours.value(for: keys[$0]) != nil }),
    ("ImagePipeline.cachedImage(for:)", { pipeline.cachedImage(for: requests[$0]) != nil }),
    // A request value made for the call (a cell that builds its request each time): nothing
    // kept from an earlier resolution, so the fetch URL is built and parsed again.
    ("cachedImage(for:), a new request", {
        pipeline.cachedImage(for: ImageRequest(url: urls[$0], width: 256, height: 256)) != nil
    }),
    ("NSCache (Foundation, string key)", { nsCache.object(forKey: nsKeys[$0]) != nil }),
    ("Mutex<Dictionary> (no LRU, floor)", { index in floor.withLock { $0[keys[index]] != nil } }),
]
// Rounds of one run per case, so a machine shared with other work loads every case alike; the
// ratio is the median of each round's ratio to that round's raw hit.
var times = [[Double]](repeating: [], count: cases.count)
for _ in 0..<runs {
    for (index, item) in cases.enumerated() { times[index].append(run(item.name, item.body)) }
}

print("entries: \(entryCount), lookups per run: \(lookups), \(runs) rounds of one run per line")
func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
for (index, item) in cases.enumerated() {
    let ratio = median(zip(times[index], times[0]).map { $0 / $1 })
    print(String(format: "%-34@ min %7.1f  median %7.1f ns per hit   %5.2f× the raw hit", item.name as NSString,
                 times[index].min() ?? 0, median(times[index]), ratio))
}
