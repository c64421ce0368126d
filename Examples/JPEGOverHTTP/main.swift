// JPEGOverHTTP: PipelineCore + CodecJPEG + LoaderHTTP, with CDN width buckets and the disk cache.
//
//   python3 -m http.server -d Samples -b 127.0.0.1 8000 &
//   swift run JPEGOverHTTP http://127.0.0.1:8000/mandelbrot.jpg http://127.0.0.1:8000/moon-gray.jpg
//
// Each URL is asked for at 300 px wide, so the fetch URL gets `?w=320` (the smallest bucket
// that covers it); run it twice to see the second run answered from the disk cache.
import CacheDisk
import CodecJPEG
import Foundation
import LoaderHTTP
import PipelineCore

let urls = CommandLine.arguments.dropFirst().compactMap(URL.init(string:))
guard !urls.isEmpty else {
    print("usage: JPEGOverHTTP URL...   (http or https URLs of JPEG pictures)")
    exit(2)
}

let diskCache = try DiskCache(name: "JPEGOverHTTP")
let pipeline = ImagePipeline(configuration: .init(
    decoders: DecoderRegistry().registering(JPEGDecoder()),
    loaders: LoaderRegistry().registering(HTTPDataLoader()),
    urlBuilder: WidthBucketURLBuilder(),  // 160, 320, 640, 1280
    diskCache: diskCache))

for url in urls {
    let request = ImageRequest(url: url, width: 300, height: 300)
    let start = Date()
    do {
        let response = try await pipeline.image(for: request)
        let ms = Date().timeIntervalSince(start) * 1000
        print("\(pipeline.fetchURL(for: request)): \(response.originalSize) → \(response.bitmap.size), "
              + "from \(response.source) in \(String(format: "%.1f", ms)) ms")
    } catch {
        print("\(url): \(error)")
    }
}
await pipeline.waitForBackgroundWork()  // let a stale entry's revalidation finish
print("disk cache: \(await diskCache.entryCount) entries, \(await diskCache.totalSize) bytes in \(diskCache.directory.path)")
