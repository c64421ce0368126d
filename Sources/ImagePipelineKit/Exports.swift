// The umbrella re-exports every module it is built from, so `import ImagePipelineKit` and the
// one product `ImagePipelineKit` are all an app needs: the pipeline (`PipelineCore`), and the
// types a configuration names (`ConnectionPolicy`, `DiskCache`, `JPEGEncoder`, …). It links
// what it re-exports anyway; an app that wants less depends on the modules it uses instead.
@_exported import CacheDisk
@_exported import CodecGIF
@_exported import CodecHEIF
@_exported import CodecJPEG
@_exported import CodecJXL
@_exported import CodecPNG
@_exported import CodecSVG
@_exported import CodecWebP
@_exported import LoaderFile
@_exported import LoaderHTTP
@_exported import PipelineCore
