"""The peer toolkits' association metrics over WEAT-style tests (WEFE, sweater): ``mac``,
``ect``, ``ripa`` and ``rnsb``; their statistics are :mod:`emb.analyses.stats.peers`."""

from __future__ import annotations

from emb.analyses.peers._peers import ECT, MAC, RIPA, RNSB, ect, mac, ripa, rnsb

__all__ = ["ECT", "MAC", "RIPA", "RNSB", "ect", "mac", "ripa", "rnsb"]
