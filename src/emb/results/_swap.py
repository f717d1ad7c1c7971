"""Moving a finished run's files into its output directory: a journalled swap that a kill at any
step leaves recoverable, to the earlier run or to the new one, whole.

:func:`emb.results.write_results` renders every file into a temporary directory it owns
(``.STEM.emb-partial-XXXXXXXX``, under the claim of ``DIR/STEM``: :func:`emb.files.outputs.claim`),
writes there the journal (:class:`Journal`, ``.emb-swap.json``: the new files and their sha256,
the earlier run's files it replaces and theirs, the exports and their temporaries), writes the
exports' temporaries beside their targets, and renames the directory to
``.STEM.emb-swap-XXXXXXXX``: the commit (:func:`commit`). Before the commit the earlier run is
whole and the temporary directory is garbage; from the commit on the new run is whole between the
swap directory and its place, and :func:`roll_forward`, whose every step may be repeated, completes
it:

1. remove the earlier run's sidecar, then its files the new run does not write (each only while it
   holds the bytes its sidecar recorded: a file changed since is not emb's any more);
2. move the new files in (each replaces the earlier run's file of its name);
3. move each export (``--export-tests FILE``) into place from its temporary beside it;
4. move the new sidecar in, last: the run is complete;
5. remove the swap directory.

The next run of the same analysis into the directory (:func:`recover`, called under the claim by
``prepare_out`` and ``write_results``) rolls a committed swap forward and removes an uncommitted
temporary directory with the export temporaries its journal lists. The tests kill the writer
before each of its changes to the file system in turn (tests/faults/test_outputs.py).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emb.files.outputs import Claim, remove_path, write_file
from emb.results._sidecar import is_bare_name

__all__ = ["JOURNAL", "Journal", "SwapBlocked", "commit", "discard", "read_journal", "recover",
           "roll_forward", "write_journal"]

JOURNAL = ".emb-swap.json"
@dataclass(frozen=True, kw_only=True)
class Journal:
    """What a swap moves: every name is a bare file name in the output directory.

    Attributes
    ----------
    stem : str
        The analysis' stem: the sidecar is ``<stem>.json``, moved last.
    files : dict
        The new run's files (the sidecar included) → sha256.
    remove : dict
        The earlier run's files (its sidecar included) → the sha256 its sidecar recorded.
    exports : dict
        Absolute export path → ``{"temp": path of its temporary, "sha256": …, "replaces": sha256
        of the earlier export there or None}``.
    """

    stem: str
    files: Mapping[str, str]
    remove: Mapping[str, str] = field(default_factory=dict)
    exports: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def sidecar(self) -> str:
        return f"{self.stem}.json"

    def to_dict(self) -> dict[str, Any]:
        return {"emb_swap": 1, "stem": self.stem, "files": dict(self.files),
                "remove": dict(self.remove),
                "exports": {k: dict(v) for k, v in self.exports.items()}}


def write_journal(directory: Path, journal: Journal) -> None:
    """Write the journal into the (uncommitted) temporary directory, flushed to disk."""
    path = directory / JOURNAL
    write_file(path, json.dumps(journal.to_dict(), indent=1).encode("utf-8"))
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sha_map(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    if not all(is_bare_name(k) and isinstance(v, str) for k, v in value.items()):
        return None
    return dict(value)


def read_journal(directory: Path) -> Journal | None:
    """The journal in ``directory``; None when it is missing or malformed (a hostile or
    truncated file is never trusted: its names must be bare file names, its exports absolute
    paths whose temporaries lie beside them)."""
    try:
        data = json.loads((directory / JOURNAL).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("emb_swap") != 1:
        return None
    stem, files, remove = data.get("stem"), _sha_map(data.get("files")), _sha_map(data.get("remove"))
    exports = data.get("exports")
    if not is_bare_name(stem) or files is None or remove is None or not isinstance(exports, dict):
        return None
    clean: dict[str, dict[str, Any]] = {}
    for target, entry in exports.items():
        if not isinstance(entry, dict) or not os.path.isabs(str(target)):
            return None
        temp, digest, replaces = entry.get("temp"), entry.get("sha256"), entry.get("replaces")
        if (not isinstance(temp, str) or Path(temp).parent != Path(target).parent
                or not Path(temp).name.startswith(f".{Path(target).name}.emb-partial-")
                or not isinstance(digest, str) or not isinstance(replaces, str | None)):
            return None
        clean[str(target)] = {"temp": temp, "sha256": digest, "replaces": replaces}
    return Journal(stem=str(stem), files=files, remove=remove, exports=clean)


def commit(partial: Path, swap: Path) -> None:
    """The commit: from here on the new run is the one a kill leaves whole."""
    os.rename(partial, swap)


def _sha256(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _holds(path: Path, digest: str | None) -> bool:
    return digest is not None and path.is_file() and not path.is_symlink() and _sha256(path) == digest


class SwapBlocked(Exception):
    """A file that is not emb's stands where an interrupted swap would move one (recovery only)."""


def roll_forward(swap: Path, directory: Path, journal: Journal, *, verify: bool) -> None:
    """Complete a committed swap (each step may have been done already).

    ``verify`` (recovering a killed run's swap): a file in the way is replaced only while it holds
    the earlier run's or the new run's bytes; :class:`SwapBlocked` otherwise, with nothing moved.

    Raises
    ------
    SwapBlocked
        ``verify`` and a file emb did not write is in the way.
    OSError
        A move or removal failed (the swap stays, to be completed by the next run).
    """
    if verify:
        for name, digest in journal.files.items():
            target = directory / name
            if (swap / name).exists() and os.path.lexists(target) and not (
                    _holds(target, journal.remove.get(name)) or _holds(target, digest)):
                raise SwapBlocked(name)
    sidecar = directory / journal.sidecar
    if (swap / journal.sidecar).exists() and _holds(sidecar, journal.remove.get(journal.sidecar)):
        sidecar.unlink()
    for name, digest in journal.remove.items():
        if name not in journal.files and _holds(directory / name, digest):
            (directory / name).unlink()
    for name in journal.files:
        if name != journal.sidecar and (swap / name).exists():
            os.replace(swap / name, directory / name)
    for target, entry in journal.exports.items():
        temp = Path(entry["temp"])
        if not temp.exists():
            continue
        path = Path(target)
        if verify and os.path.lexists(path) and not (
                _holds(path, entry["replaces"]) or _holds(path, entry["sha256"])):
            temp.unlink()  # a user's file took its place meanwhile: it stays
            continue
        os.replace(temp, path)
    if (swap / journal.sidecar).exists():
        os.replace(swap / journal.sidecar, sidecar)
    remove_path(swap)


def discard(partial: Path) -> None:
    """Remove an uncommitted temporary directory and the export temporaries its journal lists."""
    journal = read_journal(partial)
    for entry in (journal.exports.values() if journal is not None else ()):
        remove_path(Path(entry["temp"]))
    remove_path(partial)


def recover(held: Claim, directory: Path) -> list[str]:
    """Finish what a killed writer of ``held.target`` left in ``directory``: roll committed swaps
    forward, remove uncommitted temporaries. Returns a note per thing done.

    Raises
    ------
    SwapBlocked
        A committed swap cannot finish: a file emb did not write is in its way.
    OSError
        A move or removal failed.
    """
    notes = []
    for swap in held.leftovers("swap"):
        journal = read_journal(swap)
        if journal is None or journal.stem != held.target.name:
            remove_path(swap)  # not a journal emb wrote whole: nothing to complete from it
            notes.append(f"removed an interrupted run's unreadable swap directory {swap.name}")
            continue
        roll_forward(swap, directory, journal, verify=True)
        notes.append(f"completed the file swap of an interrupted '{journal.stem}' run in {directory}")
    for partial in held.leftovers("partial"):
        discard(partial)
        notes.append(f"removed the temporary files of an interrupted run in {directory}")
    return notes
