import ImageServer
import Testing

@Suite struct ImgproxyURLTests {
    @Test func unsignedPathWithoutOptionsIsRefusedUntilBuilt() {
        #expect(throws: ServerError.self) { try ImgproxyURL.parse("/insecure/plain/local:///a.jpg", signing: URLSigning(), presets: Presets()) }
    }
}
