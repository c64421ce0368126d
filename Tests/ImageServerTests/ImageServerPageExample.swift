import Foundation
import ImagePipelineKit
import ImageServer

/// The setup the ImageServer module page shows (`<!-- compiled: … -->`; `ReadmeTests` checks the
/// page shows these lines as they are). Compiled, not run: its folders are a server's.
func imageServerPageExample(key: String, salt: String) async throws -> ServerResponse {
    // README begin
    // Sources: http(s) to public addresses only, and local:/// below one folder. No file: or data: loader.
    let loaders = LoaderRegistry()
        .registering(HTTPDataLoader(configuration: .init(connectionPolicy: .publicOnly)))
        .registering(try RootedFileLoader(root: URL(fileURLWithPath: "/srv/pictures")))
    let cache = try DiskCache(directory: URL(fileURLWithPath: "/var/cache/pictures"))
    let pipeline = ImagePipeline(configuration: .init(decoders: .standard, loaders: loaders, diskCache: cache))

    var configuration = ImageServer.Configuration(pipeline: pipeline, encoders: .standard)
    configuration.allowedSchemes = ["https", "local"]
    configuration.resultCache = cache  // processed results beside the sources
    configuration.signing = try URLSigning(keys: [key], salts: [salt])
    let server = ImageServer(configuration: configuration)

    let path = "/rs:fill:300:200/g:sm/plain/local:///a.jpg"
    let response = await server.respond(
        to: ServerRequest(path: configuration.signing.signedPath(path), headers: ["Accept": "image/avif,image/webp,*/*"]))
    // 200, Content-Type: image/avif, Vary: Accept, ETag, Cache-Control: public, max-age=31536000
    // README end
    return response
}
