/// The `LoaderFile` module: filled in by its own issue.
public enum LoaderFileModule {}
