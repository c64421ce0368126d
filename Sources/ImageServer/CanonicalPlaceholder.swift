// Replaced by the URL grammar's canonical text when it lands.
extension RenderOptions {
    var canonical: String { String(describing: self) }
}
