"""emb.store."""
