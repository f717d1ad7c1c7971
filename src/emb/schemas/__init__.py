"""emb.schemas."""
