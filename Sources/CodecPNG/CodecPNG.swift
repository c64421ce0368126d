/// The `CodecPNG` module: filled in by its own issue.
public enum CodecPNGModule {}
