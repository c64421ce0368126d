import Foundation
import Synchronization

/// How long one call may take before it counts as hung: generous for a starved 2-core
/// machine. A prompt answer never waits for it (see ``withDeadline(_:_:)``).
public let hangDeadline: TimeInterval = 120

/// The error ``withDeadline(_:_:)`` throws when the operation has not answered in time.
public struct Hung: Error, CustomStringConvertible {
    public let seconds: TimeInterval
    public var description: String { "no answer within \(seconds) s: the call hangs" }
}

/// Runs `operation` in a task of its own and returns its result, or throws ``Hung`` once
/// `seconds` have passed. The deadline is a Dispatch timer racing the operation, not a sleeping
/// task: a prompt answer returns at once, and a hung operation is left behind (blocked where it
/// is), so a hang fails the test instead of stalling the run.
public func withDeadline<T: Sendable>(_ seconds: TimeInterval = hangDeadline,
                                      _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    let slot = ContinuationSlot<T>()
    return try await withCheckedThrowingContinuation { continuation in
        slot.set(continuation)
        Task {
            do { slot.resume(with: .success(try await operation())) } catch { slot.resume(with: .failure(error)) }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { slot.resume(with: .failure(Hung(seconds: seconds))) }
    }
}

/// A continuation resumed once, by whichever side comes first.
final class ContinuationSlot<T: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<T, any Error>?>(nil)

    func set(_ continuation: CheckedContinuation<T, any Error>) { self.continuation.withLock { $0 = continuation } }

    func resume(with result: Result<T, any Error>) { continuation.withLock { $0.take() }?.resume(with: result) }
}
