"""emb.extract."""
