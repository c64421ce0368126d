import Foundation
import ImagePipelineKit

/// The `ImagePipelineKit` catalog page's example, compiled here (never called: it would make a cache
/// directory in the user's home). `ReadmeTests` checks the page prints exactly these lines.
func readmeKitExample() throws -> (ImagePipeline, ImagePipeline.Configuration, ImagePipeline.Configuration) {
    // README begin
    let pipeline = try ImagePipeline.standard(diskCache: .named("MyApp"))   // disk cache in ~/.cache/MyApp
    // or start from the configuration and change what you need:
    var configuration = try ImagePipeline.Configuration.standard(diskCache: .named("MyApp"))
    configuration.urlBuilder = WidthBucketURLBuilder()
    // a server: its own cache directory (or .none), and public addresses of its sources only
    var policy = ConnectionPolicy.publicOnly
    policy.allowedHosts = ["*.cdn.example.com"]
    let server = try ImagePipeline.Configuration.standard(
        diskCache: .directory(URL(fileURLWithPath: "/var/cache/thumbnailer")), connectionPolicy: policy)
    // README end
    return (pipeline, configuration, server)
}
