"""Text embeddings behind one small interface (`Embedder`): an OpenAI-compatible
`/v1/embeddings` provider and an embedded offline default. Vectors are computed in the
background and stored with their rows; nothing here runs on a reply's path."""
