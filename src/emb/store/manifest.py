"""The manifest of a complete suite: every object it holds, with its size and CRC-32.

Written when a suite completes, as the ``manifest`` attribute of its ``_progress`` group::

    {"version": 1, "algorithm": "crc32", "n_items": 41895, "n_blocks": 82, "block_size": 512,
     "objects": {"embedding/zarr.json": [1893, "9f2c01ab"], "embedding/c/0/0/0/0": [6123456, "…"],
                 "word/zarr.json": [...], "word/c/0": [...], ...}}

Keys are relative to the suite group.  It lists every object of the group except the group's own
``zarr.json`` (rewritten when the suite completes; checked by parsing it) and the ``_progress``
sub-group (done-markers, and the manifest itself), and except temporary files of interrupted
writes (``*.partial``).  A plain check compares sizes (one stat, HEAD or zip entry per object):
it finds a missing or truncated shard, coordinate or metadata file; a deep check also reads
every byte and compares checksums (CRC-32, see :func:`emb.store._nodes.digest`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from emb.errors import StoreError
from emb.schemas import datamodel as dm
from emb.store._nodes import DamagedObject, digests, list_prefix, object_sizes

__all__ = ["MANIFEST_VERSION", "build_manifest", "check_manifest", "covered", "describe_key"]

MANIFEST_VERSION = 1


def covered(name: str, key: str) -> str | None:
    """The key relative to suite ``name`` if the manifest lists it, else None."""
    head = f"{name}/"
    if not key.startswith(head):
        return None
    rel = key[len(head) :]
    if rel == "zarr.json" or rel.startswith(f"{dm.PROGRESS_GROUP}/") or rel.endswith(".partial"):
        return None
    return rel


def build_manifest(
    zstore: Any,
    name: str,
    *,
    n_blocks: int,
    block_size: int,
    n_items: int,
    known: Mapping[str, tuple[int, str]] | None = None,
) -> dict[str, Any]:
    """List the objects of suite ``name`` as they are now; ``known`` maps relative keys to
    (size, checksum) already computed (blocks hashed when written), the rest are read here."""
    known = dict(known or {})
    rels = [rel for key in list_prefix(zstore, name) if (rel := covered(name, key)) is not None]
    missing = [rel for rel in rels if rel not in known]
    read = digests(zstore, [f"{name}/{rel}" for rel in missing])
    objects: dict[str, list[Any]] = {}
    for rel in rels:
        entry = known.get(rel) or read.get(f"{name}/{rel}")
        if entry is None:  # vanished while listing: nothing to vouch for
            continue
        if isinstance(entry, DamagedObject):
            raise StoreError(f"cannot list suite {name!r} in its manifest: {entry}") from entry
        objects[rel] = [int(entry[0]), str(entry[1])]
    return {
        "version": MANIFEST_VERSION,
        "algorithm": "crc32",
        "n_items": int(n_items),
        "n_blocks": int(n_blocks),
        "block_size": int(block_size),
        "objects": objects,
    }


def check_manifest(
    zstore: Any,
    name: str,
    manifest: Mapping[str, Any],
    *,
    deep: bool,
    expected: Collection[str] = (),
    layout: Mapping[str, int] | None = None,
) -> list[str]:
    """Problems found comparing suite ``name`` with its manifest (empty: it holds what it did).

    ``deep`` reads every object and compares its checksum; otherwise only sizes are compared.
    ``expected``: keys (relative to the suite) the manifest must list, such as every block's
    shard; ``layout``: its ``n_items``, ``n_blocks`` and ``block_size`` as the suite's arrays
    give them.  So an edited manifest (its objects emptied, a shard left out) cannot vouch for
    a suite it does not describe.
    """
    fix = (f"restore {name}/{dm.PROGRESS_GROUP}/zarr.json from a copy, or re-extract the suite "
           f"with --name {name} --overwrite")
    if refused := _refusal(name, manifest, expected=expected, layout=layout, fix=fix):
        return refused
    objects = manifest["objects"]
    block = int(manifest.get("block_size") or 0)
    n_items = int(manifest.get("n_items") or 0)
    keys = {f"{name}/{rel}": rel for rel in objects}
    sizes = object_sizes(zstore, list(keys))
    problems: list[str] = []
    for key, rel in keys.items():
        want = int(objects[rel][0])
        got = sizes[key]
        if got is None:
            problems.append(f"{name}: {describe_key(rel, block, n_items)} ({key}) is missing")
        elif got != want:
            problems.append(
                f"{name}: {describe_key(rel, block, n_items)} ({key}) has {got} bytes, the manifest {want} "
                "(truncated or rewritten)"
            )
    if deep:
        problems += _digest_problems(zstore, name, objects, keys, sizes, block=block, n_items=n_items)
    return problems


def _refusal(name: str, manifest: Mapping[str, Any], *, expected: Collection[str],
             layout: Mapping[str, int] | None, fix: str) -> list[str]:
    """Why ``manifest`` cannot vouch for suite ``name`` (empty: it can): a newer version, damaged,
    another layout than the suite's arrays, or objects of the suite it does not list."""
    objects = manifest.get("objects")
    version = manifest.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > MANIFEST_VERSION:
        return [f"{name}: its manifest has version {version}, this emb reads {MANIFEST_VERSION}; "
                "upgrade emb"]
    if (bad := _damage(version, objects)) is not None:
        return [f"{name}: its manifest is damaged ({bad}); {fix}"]
    for field, want in (layout or {}).items():
        if manifest.get(field) != want:
            return [f"{name}: its manifest says {field} = {manifest.get(field)!r}, the suite's "
                    f"arrays {want}; {fix}"]
    unlisted = sorted(set(expected) - set(objects))
    if unlisted:
        return [f"{name}: its manifest does not list {len(unlisted)} of the suite's objects "
                f"(e.g. {', '.join(unlisted[:3])}), so it cannot vouch for them; {fix}"]
    return []


def _damage(version: Any, objects: Any) -> str | None:
    """What is damaged in a manifest of this ``version`` listing ``objects`` (None: nothing)."""
    if version != MANIFEST_VERSION:
        return f"its version is {str(version)[:40]!r}"
    if not isinstance(objects, Mapping):
        return f"its 'objects' hold a {type(objects).__name__}, not an object"
    return next((f"its entry for {str(rel)[:80]!r} is not [size, crc32]"
                 for rel, e in objects.items()
                 if not (isinstance(e, list | tuple) and len(e) == 2 and isinstance(e[0], int)
                         and not isinstance(e[0], bool) and isinstance(e[1], str))), None)


def _digest_problems(zstore: Any, name: str, objects: Mapping[str, Any], keys: Mapping[str, str],
                     sizes: Mapping[str, int | None], *, block: int, n_items: int) -> list[str]:
    """The objects present whose bytes cannot be read back or differ from the manifest's crc32."""
    problems: list[str] = []
    present = {key for key, rel in keys.items() if sizes[key] is not None}
    for key, entry in digests(zstore, sorted(present)).items():
        rel = keys[key]
        if isinstance(entry, DamagedObject):
            cause = entry.__cause__ or entry
            problems.append(
                f"{name}: {describe_key(rel, block, n_items)} ({key}) cannot be read back: "
                f"{type(cause).__name__}: {cause}"
            )
        elif entry is not None and entry[1] != objects[rel][1]:
            problems.append(
                f"{name}: {describe_key(rel, block, n_items)} ({key}) has other bytes than when the suite "
                f"was completed (crc32 {entry[1]}, manifest {objects[rel][1]})"
            )
    return problems


def describe_key(rel: str, block: int, n_items: int) -> str:
    """A manifest key in words: 'the shard of block 3 (items 1536-2047)', 'the metadata of word'."""
    parts = rel.split("/")
    if parts[-1] == "zarr.json":
        return f"the metadata of {'/'.join(parts[:-1]) or 'the group'}"
    if parts[0] == dm.EMBEDDING and len(parts) > 2 and parts[1] == "c" and parts[2].isdigit():
        b = int(parts[2])
        last = min(n_items, (b + 1) * block) if n_items else (b + 1) * block
        span = f" (items {b * block}–{last - 1})" if block else ""
        return f"the embedding shard of block {b}{span}"
    return f"the data of {parts[0]}"
