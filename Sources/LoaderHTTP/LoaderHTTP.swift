/// The `LoaderHTTP` module: filled in by its own issue.
public enum LoaderHTTPModule {}
