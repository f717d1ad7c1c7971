"""Digests of the contexts sampled from the shared corpus, pinned when the sampler was rewritten
(issue 10's speed work): the sample must stay the same for the same inputs.

``python -m tests.corpus._pinned_sample DATA_DIR`` prints the digests of the current
implementation (the pinned file was written by the implementation before the rewrite, commit
0647b70).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

#: (name, copies of the shared corpus, unit, n, case_sensitive)
CASES = (
    ("sentence-2x-n100", 2, "sentence", 100, False),
    ("document-1x-n30", 1, "document", 30, False),
    ("reference-1x-n30", 1, "reference", 30, True),
)
PINNED = Path(__file__).resolve().parents[1] / "fixtures" / "ceat_sample_digests.json"


def stimuli() -> list[str]:
    from emb.stimuli.suites.ceat import CEAT_TESTS, ROLES

    return list(dict.fromkeys(w for t in CEAT_TESTS.values() for r in ROLES for w in t.words[r]))


def digests(data_dir: Path, case: tuple, *, workers: int = 1) -> dict[str, str]:
    """Per stimulus, sha256 (16 hex digits) of its seen count and every field of its contexts."""
    from emb.corpus.contexts import sample_contexts

    _, copies, unit, n, case_sensitive = case
    source = Path(data_dir) / "corpus" / "sentences.jsonl.gz"
    with tempfile.TemporaryDirectory(prefix="emb-pinned-") as tmp:
        files = []
        for i in range(copies):
            link = Path(tmp) / f"part-{i}.jsonl.gz"
            os.symlink(source, link)
            files.append(str(link))
        sample = sample_contexts(files, stimuli(), n=n, seed=0, unit=unit,
                                 case_sensitive=case_sensitive, workers=workers)
    out = {}
    for word, contexts in sample.contexts.items():
        rows = [sample.seen[word]] + [list(c) for c in contexts]
        out[word] = hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]
    return out


if __name__ == "__main__":
    data = Path(sys.argv[1])
    json.dump({case[0]: digests(data, case) for case in CASES}, sys.stdout, indent=0, sort_keys=True)
