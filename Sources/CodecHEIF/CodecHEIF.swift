/// The `CodecHEIF` module: filled in by its own issue.
public enum CodecHEIFModule {}
