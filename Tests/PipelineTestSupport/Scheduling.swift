import Testing

extension Tag {
    /// A suite that runs long synchronous, CPU-bound work (decoding corpora, encoding, reference
    /// tools as subprocesses, measuring peak memory). On a 2-core machine such work would hold
    /// both threads of Swift's cooperative pool for seconds at a time and starve the suites that
    /// wait on signals (held loads, local servers) past their time limits, so `scripts/test` runs
    /// the suites with this tag in a `swift test` process of their own, after the others. It
    /// finds them in the test sources (`scripts/test-groups`): tag a new suite here, never edit
    /// the script. Put it on the suite (`@Suite(.tags(.cpuBound))`), not on single tests.
    @Tag public static var cpuBound: Self
}
