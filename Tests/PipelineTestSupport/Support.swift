public enum PipelineTestSupport {}
