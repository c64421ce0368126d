#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Loads pictures a screen is about to show, so that they are in memory (and on disk) when
/// their cells ask: the object a screen owns for its prefetching, as Nuke's `ImagePrefetcher`.
///
/// Every method is synchronous and callable from any thread, the main thread included, without
/// `await`: feed it from a collection view's prefetch callbacks.
///
/// ```swift
/// let prefetcher = ImagePrefetcher(pipeline: pipeline)
/// // Rows coming into the prefetch window, at the size their cells will ask for:
/// prefetcher.startPrefetching(with: upcoming.map { ImageRequest(url: $0, width: 320, height: 320) })
/// // Rows leaving it before they were shown:
/// prefetcher.stopPrefetching(with: passed.map { ImageRequest(url: $0, width: 320, height: 320) })
/// ```
///
/// - Calls take effect in the order they are made from one thread: a start followed by a stop
///   ends stopped, however soon after.
/// - Prefetches run at ``ImagePriority/prefetch``, whatever the requests say: the loader's queue
///   and the decode pool start visible work first. A picture already in the memory cache, or
///   already prefetching here, is skipped.
/// - A prefetch is one more caller of ``ImagePipeline/image(for:)``: a cell that asks for the
///   same picture joins it (and raises it to visible), and stopping the prefetch then cancels
///   nothing the cell waits for.
/// - Prefetches are matched by memory key (``ImagePipeline/key(for:)``): stop with the same
///   size, mode and processors as the start. The URL forms are the requests
///   `ImageRequest(url:)`, at the original size; use the request forms when cells ask for a
///   size, or the prefetched picture is not the one they find in memory.
/// - Releasing the prefetcher stops what it started. Memory pressure stops its prefetches as
///   it does the pipeline's (``MemoryPressurePolicy/cancelsPrefetches``), and
///   ``ImagePipeline/waitForBackgroundWork()`` waits for them.
///
/// For a cell that scrolls away while its picture still loads, there are two choices: cancel
/// its ``ImageTask`` (or rebind its ``ImageTargetBinding``) when it will not come back soon, or
/// lower the task's ``ImageTask/priority`` to ``ImagePriority/prefetch`` when it may (a fling
/// back and forth): the download goes on, behind every visible one, and is raised again by
/// setting ``ImagePriority/visible`` when the cell returns.
public final class ImagePrefetcher: Sendable {
    /// The pipeline that loads.
    public let pipeline: ImagePipeline
    private let prefetches = PrefetchSet()

    /// Creates a prefetcher that loads through `pipeline`.
    public init(pipeline: ImagePipeline) {
        self.pipeline = pipeline
        pipeline.prefetchSets.register(prefetches)
    }

    // What the screen started and no longer needs.
    deinit {
        pipeline.prefetchSets.unregister(prefetches)
        prefetches.stopAll()
    }

    /// Starts prefetching `urls` at their original size (`ImageRequest(url:)`).
    public func startPrefetching(with urls: [URL]) {
        startPrefetching(with: urls.map { ImageRequest(url: $0) })
    }

    /// Starts prefetching `requests`, at ``ImagePriority/prefetch``.
    public func startPrefetching(with requests: [ImageRequest]) {
        prefetches.start(requests, in: pipeline)
    }

    /// Stops prefetching `urls` (started as `ImageRequest(url:)`).
    public func stopPrefetching(with urls: [URL]) {
        stopPrefetching(with: urls.map { ImageRequest(url: $0) })
    }

    /// Stops prefetching `requests` (matched by memory key). Work a visible caller also waits
    /// for goes on.
    public func stopPrefetching(with requests: [ImageRequest]) {
        prefetches.stop(requests.map(pipeline.key(for:)))
    }

    /// Stops every prefetch this prefetcher started.
    public func stopPrefetching() {
        prefetches.stopAll()
    }

    /// How many of this prefetcher's prefetches are running (started, not yet finished or
    /// stopped).
    public var prefetchCount: Int { prefetches.count }
}
