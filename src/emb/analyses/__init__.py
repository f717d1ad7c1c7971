"""emb.analyses."""
