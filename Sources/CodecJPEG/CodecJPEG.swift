/// The `CodecJPEG` module: filled in by its own issue.
public enum CodecJPEGModule {}
