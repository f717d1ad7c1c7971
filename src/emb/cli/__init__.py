"""emb.cli."""
