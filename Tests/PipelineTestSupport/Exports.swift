// The published test support (the `ImagePipelineTesting` product: held loader, in-memory data
// cache, event recorder, fake image format, waiting helpers) is what our own tests use too:
// every test target importing PipelineTestSupport sees it, and nothing is kept twice.
@_exported import ImagePipelineTesting
