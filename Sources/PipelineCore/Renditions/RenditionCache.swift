#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The renditions of the image stage: a request's processed and resized result kept on disk
/// encoded (its "rendition", ``DiskCachePolicy``), looked up before an image work decodes the
/// original and stored after it. Owned by ``ImageStage``, which keeps what it finds in memory.
///
/// A rendition is tagged with its original bytes (``RenditionRecord/originTag``). With the
/// original on disk, the rendition must have been made from those bytes, and a stale original
/// follows the request's ``RevalidationPolicy`` as a plain disk hit would: with
/// `staleWhileRevalidate` the rendition answers and the original is revalidated in the
/// background (new bytes change the tag); `revalidateBeforeAnswering` goes the normal way. The
/// original's bytes are neither decoded nor read: the tag is checked against its digest
/// (``DataCaching/cachedDigest(for:)``). Without the original on disk only a standalone
/// rendition answers: at once while fresh, else after its own conditional request
/// (``Revalidator``): a 304 refreshes it; new bytes come back as ``Lookup/renewed`` for the
/// work to decode; an unreachable origin leaves the stale rendition answering.
struct RenditionCache: Sendable {
    /// What a lookup at the start of a work found.
    struct Lookup: Sendable {
        /// Where the work's rendition is kept; `nil` when the work makes none.
        var store: RenditionStore?
        /// A standalone rendition's revalidation brought new bytes (`loaded`); `stale` (the
        /// stored rendition) answers if they do not decode.
        var renewed: (loaded: LoadedData, stale: CachedData)?
        /// The rendition answers, made from bytes read at `generation` (``ReplacementLedger``).
        var answer: (response: ImageResponse, generation: UInt64)?
    }

    let configuration: ImagePipeline.Configuration
    let decoder: PoolDecoder
    let revalidator: Revalidator
    let ledger: ReplacementLedger

    /// The start of a work that makes a rendition. Never inlined into the works' tasks, whose
    /// frames stay small while they wait (``DecodeStage``).
    @inline(never)
    func lookUp(_ resolved: ResolvedRequest, priority: PriorityHandle) async throws -> Lookup {
        guard let store = RenditionStore(for: resolved, configuration: configuration) else { return Lookup() }
        guard resolved.readsCaches else { return Lookup(store: store) }
        return try await lookUpStored(resolved, in: store, priority: priority)
    }

    /// ``lookUp(_:priority:)``'s disk part, for a work that makes a rendition and reads caches.
    /// Never inlined: the frame of an async function holds its whole body's locals, and a task
    /// keeps the largest frames it ever held, so a work that makes no rendition (most) does not
    /// pay this part's frame for as long as it runs.
    @inline(never)
    private func lookUpStored(_ resolved: ResolvedRequest, in store: RenditionStore, priority: PriorityHandle) async throws -> Lookup {
        do {
            try configuration.loaders.checkAllowed(resolved.fetchURL)  // as for the original's bytes
        } catch {
            throw ImagePipelineError.wrap(error, loading: resolved.fetchURL)
        }
        let started = ledger.current
        guard let stored = await store.disk.cachedData(for: store.url), let record = stored.info.rendition else {
            return Lookup(store: store)
        }
        let now = configuration.now()
        var isStale = false
        if let original = await store.disk.cachedDigest(for: resolved.cacheURL) {
            guard record.originTag == RenditionRecord.tag(for: original) else { return Lookup(store: store) }
            if !original.info.isFresh(at: now), !resolved.cacheOnly {
                guard resolved.request.revalidation == .staleWhileRevalidate else { return Lookup(store: store) }
                revalidator.revalidateInBackground(resolved, disk: store.disk)
                isStale = true
            }
        } else {
            guard record.standalone else { return Lookup(store: store) }
            if !stored.info.isFresh(at: now), !resolved.cacheOnly {
                do {
                    if let loaded = try await revalidate(stored, in: store, for: resolved, priority: priority) {
                        return Lookup(store: store, renewed: (loaded, stored))
                    }
                } catch is CancellationError {
                    throw CancellationError()
                } catch {
                    // Offline: the stale rendition still serves.
                }
            }
        }
        guard var answer = await decode(stored, in: store, key: resolved.key, priority: priority) else {
            return Lookup(store: store)
        }
        answer.isStale = isStale
        configuration.emit(.renditionHit(resolved.key))
        return Lookup(store: store, answer: (answer, started))
    }

    /// A standalone rendition's conditional request, with the validators of the original it
    /// was made from: `nil` after a 304 (its freshness and validators refreshed on disk), else
    /// the new bytes (kept as the original only by a work that keeps originals, once they
    /// decode). A `no-store` answer removes the rendition.
    private func revalidate(_ stored: CachedData, in store: RenditionStore, for resolved: ResolvedRequest,
                            priority: PriorityHandle) async throws -> LoadedData? {
        switch try await revalidator.ask(resolved, validator: stored.info.validator, priority: priority) {
        case .notModified(let answer):
            var refreshed = stored.info
            refreshed.etag = answer.etag ?? refreshed.etag
            refreshed.lastModified = answer.lastModified ?? refreshed.lastModified
            refreshed.freshUntil = answer.freshUntil
            await store.disk.updateInfo(refreshed, for: store.url)
            return nil
        case .modified(var loaded, let noStore):
            if noStore {
                await store.disk.removeData(for: store.url)
            } else if let info = loaded.info {
                loaded.pendingStore = PendingStore(disk: store.disk, url: resolved.cacheURL, data: loaded.data, info: info,
                                                   replacesStoredBytes: false)
            }
            return loaded
        }
    }

    /// `stored` (a rendition of `key`) decoded as is, with the original's size and format from
    /// its record; a damaged or undecodable one is removed and reads as `nil`.
    func decode(_ stored: CachedData, in store: RenditionStore, key: ImageKey, priority: PriorityHandle) async -> ImageResponse? {
        var plain = key.unprocessed
        plain.targetSize = .original
        plain.processing = ProcessingOptions(appliesOrientation: false, convertsToSRGB: false,
                                             pixelFormat: key.processing.pixelFormat)
        guard let result = try? await decoder.decode(stored.data, source: .rendition, key: plain, priority: priority,
                                                     placeholder: false) else {
            await store.disk.removeData(for: store.url)
            return nil
        }
        await PendingStore.promotion(of: stored, from: store.disk, url: store.url)?.storeOnce()
        var response = result.response
        if let record = stored.info.rendition {
            response.originalSize = record.originalSize
            response.format = record.format
        }
        response.placeholder = stored.info.placeholder
        return response
    }

    /// When new bytes for a rendition did not decode (`error`): the stored rendition they were
    /// to replace, decoded, as the answer with a warning; `nil` without one.
    func fallBack(from lookup: Lookup, after error: ImagePipelineError, key: ImageKey, priority: PriorityHandle) async -> ImageResponse? {
        guard let stale = lookup.renewed?.stale, let store = lookup.store,
              var answer = await decode(stale, in: store, key: key, priority: priority) else { return nil }
        answer.issues.append(.warning("the revalidated bytes did not decode (\(error)); the stored rendition was used"))
        configuration.emit(.renditionHit(key))
        return answer
    }

    /// Encodes `response` on the decode pool and stores it as `key`'s rendition, recording the
    /// original bytes it was made from (`renditionOrigin`), unless those were replaced since
    /// `generation`. A `standalone` rendition (made by a work that does not keep the original)
    /// also carries the original's validators. An encoder's failure, or a response whose bytes
    /// may not be kept, only skips the store; so does one that carries an ICC profile
    /// (``ImageResponse/iccProfile``), which a rendition would not keep.
    func store(_ response: ImageResponse, in store: RenditionStore, key: ImageKey, priority: PriorityHandle,
               madeFrom generation: UInt64?, standalone: Bool) async {
        guard let origin = response.renditionOrigin, response.iccProfile == nil,
              let data = try? await decoder.encode(response.bitmap, with: store.encoder, priority: priority),
              ledger.isCurrent(key.cacheURL, since: generation) else { return }
        let record = RenditionRecord(originTag: origin.tag, originalSize: response.originalSize, format: response.format,
                                     standalone: standalone)
        let info = CacheEntryInfo(etag: standalone ? origin.info.etag : nil, lastModified: standalone ? origin.info.lastModified : nil,
                                  freshUntil: origin.info.freshUntil, lifetimeIsHeuristic: origin.info.lifetimeIsHeuristic,
                                  rendition: record, placeholder: response.placeholder)
        await store.disk.storeData(data, info: info, for: store.url)
        configuration.emit(.renditionStored(key, bytes: data.count))
    }

    /// The placeholder kept with `resolved`'s disk entries: the original's under its cache
    /// identity, then its rendition's, read from the entry's header alone.
    func placeholder(for resolved: ResolvedRequest) async -> ThumbHash? {
        guard let disk = FetchStage.disk(for: resolved, configuration: configuration),
              (try? configuration.loaders.checkAllowed(resolved.fetchURL)) != nil else { return nil }
        if let hash = await disk.cachedDigest(for: resolved.cacheURL)?.info.placeholder { return hash }
        guard let rendition = RenditionStore.url(for: resolved.key, encoding: encoding) else { return nil }
        return await disk.cachedDigest(for: rendition)?.info.placeholder
    }

    /// The identifier of the configured encoder's renditions ("" without one).
    var encoding: String { configuration.renditionEncoder?.renditionIdentifier ?? "" }
}

/// A rendition's place: the disk cache, the encoder and its key there.
struct RenditionStore: Sendable {
    let disk: any DataCaching
    let encoder: any RenditionEncoding
    let url: URL

    /// Where `resolved`'s rendition is kept, when its fetch URL's scheme is disk-cached and an
    /// encoder is configured.
    init?(for resolved: ResolvedRequest, configuration: ImagePipeline.Configuration) {
        guard let disk = FetchStage.disk(for: resolved, configuration: configuration),
              let encoder = configuration.renditionEncoder,
              let url = Self.url(for: resolved.key, encoding: encoder.renditionIdentifier) else { return nil }
        self.disk = disk
        self.encoder = encoder
        self.url = url
    }

    /// The disk-cache key of `key`'s rendition written by an encoder whose
    /// ``RenditionEncoding/renditionIdentifier`` is `encoding`: a URL no loader serves, naming a
    /// SHA-256 of the cache identity, size, mode and crop anchor, options (a trim, a turn, a
    /// resampling filter other than the default and a sharpening only when set, so keys without
    /// them stay as they were), processor identifiers and encoding.
    static func url(for key: ImageKey, encoding: String) -> URL? {
        let size: String
        switch key.targetSize {
        case .original: size = "original"
        case .pixels(let pixels): size = "\(pixels.width)x\(pixels.height)"
        }
        let processing = key.processing
        let options = [processing.appliesOrientation, processing.strictDecoding, processing.allowsUpscaling,
                       processing.convertsToSRGB].map { $0 ? "1" : "0" }.joined()
        // A fill's anchor only when it is not the centre, so centred renditions keep their keys.
        let mode = key.contentMode.rawValue + (key.cropAnchor == .center ? "" : "@\(key.cropAnchor)")
        // A transform and a filter other than the default only when asked for, so renditions
        // without them keep their keys (the filter changes the pixels as much as a processor).
        let transform = processing.transform == .up ? [] : ["transform=\(processing.transform.rawValue)"]
        let filter = processing.resamplingFilter == .default ? [] : ["filter=\(processing.resamplingFilter.rawValue)"]
        // The levels between lenient and strict (their flag above reads "0") only when asked for.
        let level = processing.decodingStrictness == .lenient || processing.decodingStrictness == .strict
            ? [] : ["decoding=\(processing.decodingStrictness.rawValue)"]
        var parts = [key.cacheURL.absoluteString, size, mode, options] + (processing.trim.map { ["\($0)"] } ?? []) + transform
            + filter + level + (processing.sharpening.map { ["\($0)"] } ?? []) + key.processors.map(\.identifier)
        if !encoding.isEmpty { parts.append("encoding=" + encoding) }
        // Length-prefixed parts, so no identifier can imitate a boundary.
        let text = parts.map { "\($0.utf8.count):\($0)" }.joined()
        return URL(string: "imgpipe-rendition:///" + SHA256.hexDigest(Array(text.utf8)))
    }
}

/// The original a response was decoded from, as a rendition made from it records it: the
/// bytes' tag (``RenditionRecord/tag(of:)``) and their validators and freshness.
struct RenditionOrigin: Sendable {
    let tag: String
    let info: CacheEntryInfo
}
