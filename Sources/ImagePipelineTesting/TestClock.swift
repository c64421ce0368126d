import Foundation
import Synchronization

/// A clock the test moves by hand, for `ImagePipeline.Configuration.now`: fresh
/// and stale disk entries and negative-cache lifetimes without waiting for real time to pass;
/// give it to `MemoryCache(ttl:now:)` too for memory entries that expire.
///
/// ```swift
/// let clock = TestClock()
/// configuration.now = { clock.now }
/// clock.advance(601)  // the ten-minute negative cache has run out
/// ```
public final class TestClock: Sendable {
    private let current: Mutex<Date>

    /// A clock standing at `start` (default: 14 November 2023, 22:13:20 UTC, 1,700,000,000 s).
    public init(start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        current = Mutex(start)
    }

    /// The time the clock shows.
    public var now: Date { current.withLock { $0 } }

    /// Moves the clock on by `seconds` (back, when negative).
    public func advance(_ seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}
