import CRSVG

/// Keeps the messages librsvg and the libraries under it log through GLib off stderr.
///
/// librsvg 2.54 reports problems it recovers from (a broken `data:` image, an unsupported
/// feature) with `g_warning` in the `librsvg` domain, and gdk-pixbuf, GIO and GLib log in
/// theirs; GLib's default handler prints them all. A handler that drops them is installed once,
/// for those domains only (``domains``), with `g_log_set_handler`: the process's other GLib
/// logging and its structured-log writer (which GLib lets be set once per process, so a
/// library must leave it to the app) are untouched. What a decode fails on reaches the caller
/// as its error, not as a log line.
enum GLibLogSilencer {
    /// The log domains silenced: librsvg's, and those of the GLib, GIO, GObject, gdk-pixbuf,
    /// GDK and Pango code it calls.
    static let domains = ["librsvg", "rsvg", "GLib", "GLib-GIO", "GLib-GObject", "GdkPixbuf", "Gdk", "Pango", "cairo"]

    /// Installs the handlers the first time it is called (thread-safe: a `static let`).
    static func install() { _ = installed }

    private static let installed: Bool = {
        // Every level and both flags (`G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL | G_LOG_FLAG_RECURSION`).
        let levels = GLogLevelFlags(rawValue: ~0)
        for domain in domains {
            _ = g_log_set_handler(domain, levels, { _, _, _, _ in }, nil)
        }
        return true
    }()
}
