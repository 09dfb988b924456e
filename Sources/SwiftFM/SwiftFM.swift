/// SwiftFM: a client for the FileMaker Data API (placeholder module file).
enum SwiftFMModule {}
