/// The `CodecWebP` module: filled in by its own issue.
public enum CodecWebPModule {}
