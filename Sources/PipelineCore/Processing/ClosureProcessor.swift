#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// ``ImageProcessing/process(id:_:)``: a closure and the identifier its caller vouches for.
struct ClosureProcessor: ImageProcessing {
    let identifier: String
    let body: @Sendable (Bitmap) throws -> Bitmap

    func process(_ bitmap: Bitmap) throws -> Bitmap { try body(bitmap) }
}
