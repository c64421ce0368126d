import ImagePipelineKit
import PipelineCore

/// The `ImagePipelineKit` catalog page's example, compiled here (never called: it would make a cache
/// directory in the user's home). `ReadmeTests` checks the page prints exactly these lines.
func readmeKitExample() throws -> (ImagePipeline, ImagePipeline.Configuration) {
    // README begin
    let pipeline = try ImagePipeline.standard(cacheName: "MyApp")   // disk cache in ~/.cache/MyApp
    // or start from the configuration and change what you need:
    var configuration = try ImagePipeline.Configuration.standard(cacheName: "MyApp")
    configuration.urlBuilder = WidthBucketURLBuilder()
    // README end
    return (pipeline, configuration)
}
