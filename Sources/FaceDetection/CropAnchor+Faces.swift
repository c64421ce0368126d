import PipelineCore

extension CropAnchor {
    /// The window placed to keep the faces ``FaceDetector/shared`` finds (OpenCV's frontal-face
    /// cascade, on the picture the decoder already shrank), else [`attention`](/documentation/pipelinecore/cropanchor/attention) where there is
    /// none: [`detected(by:fallback:)`](/documentation/pipelinecore/cropanchor/detected(by:fallback:)) says how the faces are kept when they do not all fit.
    public static var faces: CropAnchor { .detected(by: FaceDetector.shared, fallback: .attention) }
}
