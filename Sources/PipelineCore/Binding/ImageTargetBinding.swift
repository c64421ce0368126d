/// Binds one display target (a cell, an image slot, a tile) to one request at a time: the
/// rule UIKit and SwiftUI apps follow, without a UI framework.
///
/// - A memory hit is displayed synchronously, inside ``bind(_:)`` (except for a
///   `reloadIgnoringCaches` request, which loads again).
/// - Binding a new request (or `nil`), or releasing the binding, cancels the load of the old one.
/// - A result that arrives for an old request is dropped: each bind takes a new token and a
///   result is displayed only if its token is still current.
/// - With a preview policy (``ImagePipeline/Configuration/previewPolicy``), each preview of a
///   progressive download is displayed as it comes (``ImageResponse/isPreview``), then the
///   final picture; never a preview after the final, nor one of a request no longer bound.
/// - With a `placeholder` handler, the picture's placeholder hash (``ImagePipeline/placeholder(for:)``,
///   read from the disk entry's header) is handed to it before any preview or picture, when
///   there is one and the request is still bound: draw `Bitmap(thumbHash:size:)` at the
///   target's size. Never after a preview or the picture.
@MainActor
public final class ImageTargetBinding {
    /// The pipeline that loads for this target.
    public let pipeline: ImagePipeline
    /// The request currently bound, or `nil`.
    public private(set) var request: ImageRequest?
    /// The response currently displayed, or `nil` (placeholder).
    public private(set) var displayed: ImageResponse?

    private let display: @MainActor (ImageResponse?) -> Void
    private let onFailure: (@MainActor (ImageRequest, any Error) -> Void)?
    private let placeholder: (@MainActor (ThumbHash) -> Void)?
    private var token: UInt64 = 0
    private var task: Task<Void, Never>?

    /// Creates a binding that calls `display` with each response, and with `nil` to show a
    /// placeholder when a new request starts loading or the target is unbound; and, when
    /// given, `placeholder` with the picture's placeholder hash while it loads.
    public init(pipeline: ImagePipeline,
                onFailure: (@MainActor (ImageRequest, any Error) -> Void)? = nil,
                placeholder: (@MainActor (ThumbHash) -> Void)? = nil,
                display: @escaping @MainActor (ImageResponse?) -> Void) {
        self.pipeline = pipeline
        self.display = display
        self.onFailure = onFailure
        self.placeholder = placeholder
    }

    // A target that goes away no longer wants its picture: cancel the load, as a rebind does.
    deinit {
        task?.cancel()
    }

    /// Binds `request` (or nothing), cancelling whatever was bound before.
    public func bind(_ request: ImageRequest?) {
        token &+= 1
        let current = token
        task?.cancel()
        task = nil
        self.request = request
        guard let request else { show(nil); return }
        // A reload must not be answered from memory, here as in `image(for:)`.
        if request.cachePolicy != .reloadIgnoringCaches, let hit = pipeline.cachedImage(for: request) {
            show(hit)
            return
        }
        show(nil)
        let imageTask = pipeline.imageTask(for: request)
        let pipeline = pipeline, wantsPlaceholder = placeholder != nil
        task = Task { [weak self] in
            do {
                // The hash first (a header read), shown only while nothing else has been.
                if wantsPlaceholder, let hash = await pipeline.placeholder(for: request),
                   let self, self.token == current, self.displayed == nil {
                    self.placeholder?(hash)
                }
                // Previews first (with a preview policy), each only while this request is
                // still bound; the stream ends before the final answer is ready.
                for await preview in imageTask.previews {
                    guard let self, self.token == current else { break }
                    self.show(preview)
                }
                let response = try await imageTask.response
                guard let self, self.token == current else { return }
                self.task = nil
                self.show(response)
            } catch {
                guard let self, self.token == current, !(error is CancellationError) else { return }
                self.task = nil
                self.onFailure?(request, error)
            }
        }
    }

    /// Unbinds: cancels the load and shows the placeholder. Same as `bind(nil)`.
    public func unbind() { bind(nil) }

    /// `true` while a load for the bound request is running.
    public var isLoading: Bool { task != nil }

    private func show(_ response: ImageResponse?) {
        displayed = response
        display(response)
    }
}
