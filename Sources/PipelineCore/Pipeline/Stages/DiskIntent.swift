import Foundation

/// An image work's disk policy: whether its result is stored as a rendition (decided by the
/// request that created it; `nil` until then), and whether loaded bytes it decodes are kept as
/// the original (when any request that joined wants them).
struct DiskIntent {
    var makesRendition: Bool?
    var storesOriginal = false
}

extension DiskIntent {
    /// Takes `resolved`'s ``DiskCachePolicy``: whether the work makes a rendition (its creator
    /// decides) and whether it keeps loaded bytes as the original (any request that joins may
    /// ask for that). `asBaseStoringOriginal`: see ``DecodeStage/work(for:asBaseStoringOriginal:in:)``.
    mutating func adopt(_ resolved: ResolvedRequest, asBaseStoringOriginal: Bool?, configuration: ImagePipeline.Configuration) {
        let policy = resolved.request.diskCachePolicy ?? configuration.diskCachePolicy
        if makesRendition == nil { makesRendition = asBaseStoringOriginal == nil && policy.makesRendition(for: resolved.key) }
        if asBaseStoringOriginal ?? policy.storesOriginal(for: resolved.key) { storesOriginal = true }
    }
}

extension InFlightTable where Key == ImageKey, Value == ImageResponse {
    /// The image work (a decode or a processing) for `resolved`'s key, joined or started, its
    /// ``DiskIntent`` taken from the request. The work's task runs on the actor, so it starts
    /// only after that is set.
    func work(for resolved: ResolvedRequest, asBaseStoringOriginal: Bool? = nil, in pipeline: isolated ImagePipeline,
              perform: @escaping @Sendable (isolated ImagePipeline, InFlightWork<ImageResponse>) async throws -> ImageResponse)
        -> InFlightWork<ImageResponse> {
        let work = work(for: resolved.key, priority: resolved.request.priority, cachePolicy: resolved.request.cachePolicy,
                        in: pipeline, perform: perform)
        work.disk.adopt(resolved, asBaseStoringOriginal: asBaseStoringOriginal, configuration: pipeline.configuration)
        return work
    }
}
