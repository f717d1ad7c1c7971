"""Reading and writing the user's files safely, below every other room (torch-free).

What emb reads: JSON and YAML documents within limits, with their errors shown in one line
(:mod:`~emb.files.documents`); paths that must be regular files, not FIFOs or devices
(:mod:`~emb.files.special`); the network limits of every remote read (:mod:`~emb.files.network`).
What emb writes: where it may write (never inside a store, never over a file it did not write),
claims of an output directory, full disks (:mod:`~emb.files.outputs`), and the one-writer lock
file (:mod:`~emb.files.lockfile`).
"""

from __future__ import annotations

__all__: list[str] = []
