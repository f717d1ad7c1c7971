"""Corpus files under a hostile user (issue 20): cut and multi-member compressed files, pipes,
FIFOs and devices, records of any length, JSON that Python's reader trips over, damaged Parquet.

Each case is read by the library (``corpus_files`` + ``iter_blocks``; ``load_corpus`` for the
VAST sentence corpus) and, for the CLI's view, by the real ``emb extract`` in a child process
(tests/_hostile.py): the cheapest command that reads a corpus is the ``ceat`` suite with a static
vectors file as the model and ``--dry-run`` (the suite is sampled, nothing is extracted).
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from emb.corpus import stream as corpus_stream
from emb.corpus.in_memory import load_corpus
from emb.corpus.stream import corpus_files, iter_blocks, record_ids
from emb.errors import CorpusError
from emb.store import open_store
from tests._hostile import Outcome, assert_refused, run_emb

WORDS = ["rose", "lily", "ant", "bee", "love", "peace", "war", "death"]
TESTS = {"tests": {"T1": {"X_name": "flowers", "Y_name": "insects", "A_name": "pleasant",
                          "B_name": "unpleasant", "X": ["rose", "lily"], "Y": ["ant", "bee"],
                          "A": ["love", "peace"], "B": ["war", "death"]}}}
TEXTS = [f"The {w} was here on day {i}." for i in range(40) for w in WORDS]  # 320 records
KINDS = ["gzip", "zstd", "xz", "bz2"]
SUFFIX = {"gzip": "gz", "zstd": "zst", "xz": "xz", "bz2": "bz2"}


def _jsonl(texts: list[str], first_id: int = 0) -> bytes:
    return "".join(json.dumps({"id": first_id + i, "text": t}) + "\n"
                   for i, t in enumerate(texts)).encode()


def _compress(kind: str, data: bytes) -> bytes:
    if kind == "gzip":
        return gzip.compress(data, mtime=0)
    if kind == "zstd":
        return zstandard.ZstdCompressor().compress(data)
    if kind == "xz":
        return lzma.compress(data)
    return bz2.compress(data)


def _skippable(payload: bytes, magic: int = 0x184D2A50) -> bytes:
    """A zstandard skippable frame (``pzstd`` opens its files with one)."""
    return struct.pack("<II", magic, len(payload)) + payload


def _read(path: Path | str, **options) -> tuple[list[str], list[int], list[int], dict]:
    """Texts, line numbers and offsets of every record of a corpus file, and the block counts."""
    texts: list[str] = []
    lines: list[int] = []
    offsets: list[int] = []
    counts = {"skipped": 0, "too_long": 0, "invalid_unicode": 0, "ids": []}
    for file in corpus_files([str(path)]):
        for block in iter_blocks(file, **options):
            texts += [block.text(i) for i in range(len(block))]
            lines += block.lines.tolist()
            offsets += block.offsets.tolist()
            counts["ids"] += record_ids(block, list(range(len(block))))
            for key in ("skipped", "too_long", "invalid_unicode"):
                counts[key] += getattr(block, key, 0)
    return texts, lines, offsets, counts


def _refusal_within(seconds: float, read: Callable[[], object]) -> CorpusError:
    """The CorpusError that ``read()`` raises, or a failed test if it hangs (a hang guard: the
    read runs in a daemon thread, left behind if it blocks on a FIFO)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            read()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"hung for {seconds} s"
    assert isinstance(outcome[0], CorpusError), f"expected a CorpusError, got {outcome[0]!r}"
    return outcome[0]


# -- the CLI ---------------------------------------------------------------------------------------
@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A directory with a static vectors file of the stimuli (the model) and the CEAT tests."""
    rows = "".join(f"{w} {' '.join(str(0.1 * (i + k + 1)) for k in range(4))}\n"
                   for i, w in enumerate(WORDS))
    (tmp_path / "vectors.txt").write_text(f"{len(WORDS)} 4\n{rows}", encoding="utf-8")
    (tmp_path / "tests.json").write_text(json.dumps(TESTS), encoding="utf-8")
    return tmp_path


def _ceat(work: Path, *corpus: str | Path, options: tuple[str, ...] = ("--dry-run",),
          stdin: int | None = subprocess.DEVNULL, timeout: float = 60) -> Outcome:
    args = ["extract", "--model", "vectors.txt", "--suite", "ceat", "--test", "tests.json",
            "--contexts", "2", "--store", "ceat.zarr", "--workers", "1", *options]
    for c in corpus:
        args += ["--corpus", str(c)]
    return run_emb(*args, cwd=work, stdin=stdin, timeout=timeout)


def test_cli_a_cut_zstd_file_is_refused_naming_it(work: Path) -> None:
    data = _compress("zstd", _jsonl(TEXTS * 50))
    (work / "RC_cut.zst").write_bytes(data[: len(data) * 6 // 10])
    message = assert_refused(_ceat(work, "RC_cut.zst", options=("--dry-run", "--allow-missing")),
                             codes=(1,), mentions=["RC_cut.zst", "cut short", "zstd -t"])
    assert "decompressed bytes" in message


def test_cli_a_cut_second_file_of_two_is_refused_naming_it(work: Path) -> None:
    (work / "a.jsonl.zst").write_bytes(_compress("zstd", _jsonl(TEXTS)))
    data = _compress("zstd", _jsonl(TEXTS * 50, first_id=10_000))
    (work / "b.jsonl.zst").write_bytes(data[: len(data) // 2])
    outcome = run_emb("extract", "--model", "vectors.txt", "--suite", "ceat", "--test",
                      "tests.json", "--contexts", "2", "--store", "ceat.zarr", "--dry-run",
                      "--workers", "2", "--corpus", "a.jsonl.zst", "--corpus", "b.jsonl.zst",
                      cwd=work, timeout=120)
    assert_refused(outcome, codes=(1,), mentions=["b.jsonl.zst", "cut short"])


def test_cli_a_pzstd_file_is_read_whole(work: Path) -> None:
    """pzstd writes a skippable frame before each frame: the file was read as empty (or as
    text that is not UTF-8)."""
    half = len(TEXTS) // 2
    body = (_skippable(b"\x00\x00\x00\x00") + _compress("zstd", _jsonl(TEXTS[:half]))
            + _skippable(b"\x01\x02\x03\x04", 0x184D2A5F)
            + _compress("zstd", _jsonl(TEXTS[half:], first_id=half)))
    (work / "RC_pzstd.zst").write_bytes(body)
    outcome = _ceat(work, "RC_pzstd.zst", options=())
    assert outcome.code == 0, outcome
    seen = open_store(work / "ceat.zarr").dataset("ceat").attrs["suite"]["parameters"]["stimuli"]
    assert {w: seen[w]["seen"] for w in WORDS} == dict.fromkeys(WORDS, 40)


def test_cli_a_pipe_is_refused_with_the_reason(work: Path) -> None:
    read, write = os.pipe()
    os.write(write, _jsonl(TEXTS[:20]))
    os.close(write)
    try:
        outcome = _ceat(work, "/dev/stdin", stdin=read)
    finally:
        os.close(read)
    assert_refused(outcome, codes=(1,), mentions=["/dev/stdin", "is a pipe", "read twice"])


def test_cli_a_fifo_without_a_writer_is_refused_not_waited_for(work: Path) -> None:
    os.mkfifo(work / "fifo.jsonl")
    assert_refused(_ceat(work, "fifo.jsonl", timeout=60), codes=(1,),
                   mentions=["fifo.jsonl", "named pipe"])
    # the VAST sentence corpus too (read whole by load_corpus)
    (work / "lexicon.csv").write_text("word,valence\nrose,7.5\nwar,2.0\n", encoding="utf-8")
    outcome = run_emb("extract", "--model", "vectors.txt", "--suite", "vast", "--lexicon",
                      "lexicon.csv", "--corpus", "fifo.jsonl", "--store", "vast.zarr",
                      "--dry-run", cwd=work, timeout=60)
    assert_refused(outcome, codes=(1,), mentions=["fifo.jsonl", "named pipe"])


def test_cli_dev_zero_is_refused_not_read_forever(work: Path) -> None:
    assert_refused(_ceat(work, "/dev/zero", timeout=60), codes=(1,),
                   mentions=["/dev/zero", "character device"])


def test_cli_deeply_nested_json_is_refused_naming_the_line(work: Path) -> None:
    deep = '{"id": 1, "text": "The rose is deep.", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    (work / "deep.jsonl").write_bytes(_jsonl(TEXTS[:8]) + deep.encode())
    assert_refused(_ceat(work, "deep.jsonl"), codes=(1,),
                   mentions=["deep.jsonl", "line 9", "nested too deeply"])


def test_cli_lone_surrogates_skip_their_records_and_count_them(work: Path) -> None:
    bad = (b'{"id": 900, "text": "The rose \\ud800 is broken."}\n'
           b'{"id": "\\udc00", "text": "The war id is broken."}\n')
    (work / "sur.jsonl").write_bytes(_jsonl(TEXTS[:16]) + bad + _jsonl(TEXTS[16:24], 16))
    outcome = _ceat(work, "sur.jsonl", options=())
    assert outcome.code == 0, outcome
    assert "skipped 2 corpus record(s) whose text or id holds an unpaired surrogate" in outcome.stderr
    params = open_store(work / "ceat.zarr").dataset("ceat").attrs["suite"]["parameters"]
    assert params["corpus"]["records_invalid_unicode"] == 2
    assert params["corpus"]["records_too_long"] == 0
    assert params["corpus"]["max_record_bytes"] == 8 * 2**20
    assert params["stimuli"]["rose"]["seen"] == 3 and params["stimuli"]["war"]["seen"] == 3


def test_cli_damaged_parquet_is_refused_naming_it(work: Path) -> None:
    table = pa.table({"id": list(range(len(TEXTS))), "text": TEXTS})
    pq.write_table(table, work / "good.parquet")
    data = bytearray((work / "good.parquet").read_bytes())
    for i in range(8, 400):  # the first pages, past the magic bytes
        data[i] ^= 0x5A
    (work / "bad.parquet").write_bytes(bytes(data))
    assert_refused(_ceat(work, "bad.parquet"), codes=(1,), mentions=["bad.parquet", "damaged"])


def _peak_run(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``emb ARGS`` and return how it ended and its own peak resident memory (MiB, the
    kernel's VmHWM at exit). ``Outcome.peak_rss_mib`` of tests/_hostile.py cannot serve here:
    Linux keeps a process' ``ru_maxrss`` across fork and exec, so it is at least the pytest
    process' own size, which a full run makes large."""
    wrapper = (
        "import atexit, os\n"
        "def _peak():\n"
        "    with open('/proc/self/status') as f:\n"
        "        kib = next(int(l.split()[1]) for l in f if l.startswith('VmHWM'))\n"
        "    with open(os.environ['EMB_TEST_PEAK'], 'w') as f:\n"
        "        f.write(str(kib))\n"
        "atexit.register(_peak)\n"
        "from emb.cli.main import main\n"
        "main()\n"
    )
    peak = cwd / "peak.txt"
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "EMB_TEST_PEAK": str(peak),
           "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, "-c", wrapper, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    return done, int(peak.read_text()) / 1024


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_cli_one_huge_record_keeps_memory_bounded(work: Path) -> None:
    """A 64 MiB record (stimuli in it every few KB) took 580 MiB over the baseline as one
    document and minutes as sentences; it is skipped (over 8 MiB), counted and reported."""
    unit = "alpha beta gamma delta epsilon zeta eta theta. " * 200 + "The rose was here. "
    with open(work / "huge.jsonl", "wb") as f:
        f.write(_jsonl(TEXTS[:100]))
        f.write(b'{"id": "huge", "text": "')
        for _ in range(64 * 2**20 // len(unit)):
            f.write(unit.encode())
        f.write(b'"}\n')
        f.write(_jsonl(TEXTS[100:], 100))
    (work / "small.jsonl").write_bytes(_jsonl(TEXTS))
    base = ["extract", "--model", "vectors.txt", "--suite", "ceat", "--test", "tests.json",
            "--contexts", "2", "--store", "ceat.zarr", "--dry-run", "--workers", "1"]
    small, small_peak = _peak_run([*base, "--corpus", "small.jsonl"], work)
    assert small.returncode == 0, small.stderr
    for unit_option in ("document", "sentence"):
        done, peak = _peak_run([*base, "--unit", unit_option, "--corpus", "huge.jsonl"], work)
        assert done.returncode == 0, done.stderr
        assert "skipped 1 corpus record(s) longer than 8 MiB" in done.stderr
        assert peak - small_peak < 100, (unit_option, peak, small_peak)


# -- compressed files, by the library --------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_every_member_of_a_compressed_file_is_read(tmp_path: Path, kind: str) -> None:
    half = len(TEXTS) // 2
    path = tmp_path / f"corpus.jsonl.{SUFFIX[kind]}"
    path.write_bytes(_compress(kind, _jsonl(TEXTS[:half])) + _compress(kind, _jsonl(TEXTS[half:])))
    texts, lines, _, _ = _read(path)
    assert texts == TEXTS and lines == list(range(1, len(TEXTS) + 1))
    assert load_corpus(path).sentences == tuple(TEXTS)


@pytest.mark.parametrize("where", ["first", "between", "last", "only"])
def test_zstd_skippable_frames_are_passed_over(tmp_path: Path, where: str) -> None:
    half = len(TEXTS) // 2
    a, b = _compress("zstd", _jsonl(TEXTS[:half])), _compress("zstd", _jsonl(TEXTS[half:]))
    skip = _skippable(b"pzstd\x00" * 3, 0x184D2A53)
    body = {"first": skip + a + b, "between": a + skip + b, "last": a + b + skip,
            "only": skip}[where]
    path = tmp_path / "RC_2014-01"  # no suffix, as Pushshift publishes them
    path.write_bytes(body)
    (file,) = corpus_files([str(path)])
    assert file.compression == "zstd"
    texts, _, _, _ = _read(path, text_field="text")
    assert texts == ([] if where == "only" else TEXTS)


@pytest.mark.parametrize("kind", ["zstd", "xz", "bz2"])
def test_many_small_frames_are_read_whole(tmp_path: Path, kind: str) -> None:
    """Frames of one record each (ending anywhere in a read and in zstd's 1 KiB pieces), with
    skippable frames between them (zstd) or stream padding (xz)."""
    parts = []
    for i, text in enumerate(TEXTS * 3):
        parts.append(_compress(kind, _jsonl([text], i)))
        if kind == "zstd" and i % 7 == 0:
            parts.append(_skippable(b"x" * (i % 50), 0x184D2A50 + i % 16))
        if kind == "xz" and i % 5 == 0:
            parts.append(b"\x00" * 4 * (i % 3))
    (tmp_path / "many").write_bytes(b"".join(parts))
    assert _read(tmp_path / "many")[0] == TEXTS * 3


def test_zstd_long_window_frames_are_read(tmp_path: Path) -> None:
    """Pushshift's dumps need a 2 GiB window (zstd --long=31): the new decoder keeps it."""
    params = zstandard.ZstdCompressionParameters(window_log=31, enable_ldm=True)
    writer = zstandard.ZstdCompressor(compression_params=params).compressobj()
    frame = writer.compress(_jsonl(TEXTS)) + writer.flush()
    assert zstandard.get_frame_parameters(frame).window_size == 2**31
    (tmp_path / "RC.zst").write_bytes(frame)
    assert _read(tmp_path / "RC.zst")[0] == TEXTS


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cut", [0.5, -1, -9])
def test_a_cut_file_is_an_error_naming_it(tmp_path: Path, kind: str, cut: float) -> None:
    data = _compress(kind, _jsonl(TEXTS * 20))
    end = int(len(data) * cut) if cut > 0 else len(data) + int(cut)
    path = tmp_path / f"cut.jsonl.{kind}"
    path.write_bytes(data[:end])
    with pytest.raises(CorpusError, match=rf"cut\.jsonl\.{kind} is cut short"):
        _read(path)
    with pytest.raises(CorpusError, match=rf"cut\.jsonl\.{kind} is cut short"):
        load_corpus(path)
    # a second, cut member after a whole one: the first member's records are not enough
    path.write_bytes(_compress(kind, _jsonl(TEXTS)) + data[:end])
    with pytest.raises(CorpusError, match="is cut short"):
        _read(path)


@pytest.mark.parametrize("kind", KINDS)
def test_data_after_the_last_member_is_an_error(tmp_path: Path, kind: str) -> None:
    """A damaged second member (its magic bytes gone) or trailing garbage is not the end of the
    corpus: xz, bzip2 and zstandard stopped there without a word."""
    data = _compress(kind, _jsonl(TEXTS))
    path = tmp_path / "corpus.jsonl.x"
    for tail in (b"\x00" + data[1:], b"trailing garbage, not compressed data\n"):
        path.write_bytes(data + tail)
        with pytest.raises(CorpusError, match=rf"corpus {path}"):
            _read(path)


def test_gzip_without_isal_is_checked_the_same(tmp_path: Path, monkeypatch) -> None:
    """The stdlib's gzip reader (no corpus extra): every member, a cut or garbage refused."""
    monkeypatch.setitem(sys.modules, "isal", None)  # `from isal import igzip` fails
    data = _compress("gzip", _jsonl(TEXTS))
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(data + data)
    assert _read(path)[0] == TEXTS + TEXTS
    path.write_bytes(data + data[:-5])
    with pytest.raises(CorpusError, match=r"c\.jsonl\.gz is cut short or damaged"):
        _read(path)
    path.write_bytes(data + b"garbage!")
    with pytest.raises(CorpusError, match=r"cannot decompress gzip corpus .*Not a gzipped file"):
        _read(path)


@pytest.mark.parametrize("kind", ["gzip", "xz"])
def test_padding_after_the_last_member_is_allowed(tmp_path: Path, kind: str) -> None:
    """gzip and xz allow NUL padding after a member (xz: stream padding, by fours)."""
    path = tmp_path / "corpus.jsonl.x"
    path.write_bytes(_compress(kind, _jsonl(TEXTS)) + b"\x00" * 8)
    assert _read(path)[0] == TEXTS


def test_a_compressed_file_that_is_nothing_but_its_magic_is_cut_short(tmp_path: Path) -> None:
    for kind, magic in (("gzip", b"\x1f\x8b"), ("zstd", b"\x28\xb5\x2f\xfd"),
                        ("xz", b"\xfd7zXZ\x00"), ("bz2", b"BZh9")):
        path = tmp_path / f"m.{kind}"
        path.write_bytes(magic)
        with pytest.raises(CorpusError, match="cut short"):
            _read(path)


def test_a_zstd_bomb_is_read_in_bounded_pieces() -> None:
    """zstd's decoder object has no output limit: 1 KiB of input at a time keeps each piece at
    most 32 MiB (here, 256 MiB of zeros from 8 KB)."""
    from emb.corpus.files import decompressed

    bomb = zstandard.ZstdCompressor().compress(b"\x00" * 2**28)
    stream = decompressed(__import__("io").BytesIO(bomb), compression="zstd", path="bomb.zst")
    largest = total = 0
    for piece in stream._pieces:
        largest = max(largest, len(piece))
        total += len(piece)
    assert total == 2**28 and largest <= 32 * 2**20


# -- special files, by the library -----------------------------------------------------------------
def test_special_files_are_refused_up_front(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="character device"):
        corpus_files(["/dev/null"])
    with pytest.raises(CorpusError, match="character device"):
        load_corpus("/dev/null")
    read, write = os.pipe()
    try:
        os.write(write, _jsonl(TEXTS[:4]))
        for path in (f"/dev/fd/{read}", f"/proc/self/fd/{read}"):
            with pytest.raises(CorpusError, match=r"is a pipe \(such as <\(zcat FILE\)\)"):
                corpus_files([path])
            with pytest.raises(CorpusError, match="is a pipe"):
                load_corpus(path)
        other, other_write = os.pipe()  # two pipes (an internal error before): the first refused
        try:
            with pytest.raises(CorpusError, match=rf"/dev/fd/{read} is a pipe"):
                corpus_files([f"/dev/fd/{read}", f"/dev/fd/{other}"])
        finally:
            os.close(other)
            os.close(other_write)
    finally:
        os.close(read)
        os.close(write)
    with tempfile.TemporaryDirectory(dir="/tmp") as short:  # a socket path is at most 107 bytes
        server = socket.socket(socket.AF_UNIX)
        try:
            server.bind(os.path.join(short, "s.sock"))
            with pytest.raises(CorpusError, match="is a socket, not a regular file"):
                corpus_files([os.path.join(short, "s.sock")])
        finally:
            server.close()
    os.mkfifo(tmp_path / "fifo")
    for read in (lambda: corpus_files([str(tmp_path / "fifo")]),  # refused before it is opened
                 lambda: load_corpus(tmp_path / "fifo")):
        assert "is a named pipe" in str(_refusal_within(60, read))


def test_a_fifo_swapped_in_after_the_check_is_not_waited_for(tmp_path: Path) -> None:
    """The files are opened without blocking and checked again on the open descriptor."""
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(_jsonl(TEXTS[:4]))
    (file,) = corpus_files([str(path)])
    path.unlink()
    os.mkfifo(path)
    assert "is a named pipe" in str(_refusal_within(60, lambda: list(iter_blocks(file))))


def test_a_symbolic_link_to_a_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "real.jsonl").write_bytes(_jsonl(TEXTS[:4]))
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "real.jsonl")
    assert _read(tmp_path / "link.jsonl")[0] == TEXTS[:4]


# -- records of any length -------------------------------------------------------------------------
def _long_lines_corpus(lengths: list[int]) -> tuple[bytes, list[tuple[str, int, int]]]:
    """A text corpus of lines of the given lengths (no final newline when the last length is
    negative) and the records expected (text, line, offset) when lines over the limit go."""
    out, expected, offset = [], [], 0
    for number, n in enumerate(lengths, start=1):
        text = (f"r{number} " + "x" * abs(n))[: max(abs(n), 1)]
        out.append(text.encode())
        if len(text) <= corpus_stream.MAX_RECORD_BYTES:
            expected.append((text, number, offset))
        offset += len(text) + 1
    data = b"\n".join(out) + (b"" if lengths[-1] < 0 else b"\n")
    return data, expected


@pytest.mark.parametrize(
    "lengths",
    [
        [10, 5000, 10],  # a long line that spans many reads
        [10, 1200, 10],  # a long line whole in one chunk (limit < length < limit + block)
        [10, 5000, 3000, 10, 2000],  # long lines in a row, and one at the end
        [10, -5000],  # a long last line without a newline
        [5000],
        [1024, 1025, 10],  # at the limit and one byte over
    ],
)
def test_records_over_the_limit_are_skipped_and_counted(tmp_path, monkeypatch, lengths) -> None:
    monkeypatch.setattr(corpus_stream, "BLOCK_BYTES", 700)
    monkeypatch.setattr(corpus_stream, "MAX_RECORD_BYTES", 1024)
    data, expected = _long_lines_corpus(lengths)
    (tmp_path / "c.txt").write_bytes(data)
    texts, lines, offsets, counts = _read(tmp_path / "c.txt")
    assert list(zip(texts, lines, offsets, strict=True)) == expected
    assert counts["too_long"] == sum(abs(n) > 1024 for n in lengths)
    # the same lines as JSON records: the limit is on the line (the JSON text)
    records = [json.dumps({"text": t.decode()}) for t in data.rstrip(b"\n").split(b"\n")]
    (tmp_path / "c.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    long = [len(r.encode()) > 1024 for r in records]
    texts, lines, _, counts = _read(tmp_path / "c.jsonl")
    assert lines == [i + 1 for i, x in enumerate(long) if not x]
    assert counts["too_long"] == sum(long)


def test_parquet_texts_over_the_limit_are_skipped_and_counted(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(corpus_stream, "MAX_RECORD_BYTES", 100)
    texts = ["The rose.", "x" * 101, None, "The war.", "y" * 100]
    pq.write_table(pa.table({"text": texts}), tmp_path / "c.parquet")
    got, lines, _, counts = _read(tmp_path / "c.parquet")
    assert got == ["The rose.", "The war.", "y" * 100] and lines == [1, 4, 5]
    assert counts["too_long"] == 1 and counts["skipped"] == 1


def test_parquet_batches_hold_about_a_block(tmp_path) -> None:
    rows = 3000
    pq.write_table(pa.table({"text": ["x" * 10_000] * rows}), tmp_path / "wide.parquet")
    reader = pq.ParquetFile(tmp_path / "wide.parquet")
    size = corpus_stream._parquet_batch_rows(reader, "text")
    assert size * 10_000 <= 2 * corpus_stream.BLOCK_BYTES and size < rows


@pytest.mark.parametrize("kind", ["string", "large_string", "string_view", "dictionary", "null"])
def test_parquet_text_columns_of_every_string_type_are_read(tmp_path, kind) -> None:
    texts = ["The rose.", "x" * 20_000, None, "The rose."]
    column = {
        "string": pa.array(texts),
        "large_string": pa.array(texts, type=pa.large_string()),
        "string_view": pa.array(texts, type=pa.string_view()),
        "dictionary": pa.array(texts).dictionary_encode(),
        "null": pa.nulls(len(texts)),
    }[kind]
    pq.write_table(pa.table({"text": column}), tmp_path / "c.parquet")
    got, lines, _, counts = _read(tmp_path / "c.parquet")
    if kind == "null":
        assert got == [] and counts["skipped"] == 4
    else:
        assert got == ["The rose.", "x" * 20_000, "The rose."] and lines == [1, 2, 4]


def test_parquet_text_column_of_numbers_is_refused(tmp_path) -> None:
    pq.write_table(pa.table({"text": [1, 2, 3]}), tmp_path / "n.parquet")
    with pytest.raises(CorpusError, match="column 'text' holds int64, not strings"):
        _read(tmp_path / "n.parquet")


# -- JSON that Python's reader trips over ----------------------------------------------------------
def test_lone_surrogates_skip_the_record_and_are_counted(tmp_path: Path) -> None:
    bad = (b'{"id": 1, "text": "a \\ud800 rose"}\n{"id": "\\udfff", "text": "a rose"}\n'
           b'{"id": 3, "text": "a rose \\ud83d\\ude00 paired"}\n{"id": 4, "text": "\\ud800"}\n')
    (tmp_path / "c.jsonl").write_bytes(bad + _jsonl(["a rose"], 5))
    texts, lines, _, counts = _read(tmp_path / "c.jsonl")
    assert texts == ["a rose \U0001F600 paired", "a rose"] and lines == [3, 5]
    assert counts["invalid_unicode"] == 3 and counts["skipped"] == 0
    assert counts["ids"] == ["3", "5"]


def test_nested_json_and_huge_integers(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(_jsonl(["a rose"]) + b'{"text": "x", "y": ' + b"[" * 50_000 + b"]" * 50_000
                     + b"}\n")
    with pytest.raises(CorpusError, match=r"c\.jsonl line 2: JSON nested too deeply"):
        _read(path)
    # an integer of 5,000 digits elsewhere in a line is read (msgspec reads it; so must json,
    # which decodes the block again when another line holds a lone surrogate)
    huge = "9" * 5000
    path.write_bytes(b'{"id": ' + huge.encode() + b', "text": "a rose"}\n'
                     + b'{"id": 2, "text": "a rose", "z": "\\ud800"}\n')
    texts, _, _, counts = _read(path)
    assert texts == ["a rose", "a rose"] and counts["ids"] == [huge, "2"]
    path.write_bytes(b'{"text": ' + huge.encode() + b'}\n{"text": "\\ud800"}\n')
    with pytest.raises(CorpusError, match="line 1: field 'text' is int, not a string"):
        _read(path)


def test_parquet_with_any_byte_flipped_is_read_or_refused(tmp_path: Path) -> None:
    """Every byte of a small Parquet file flipped in turn: the fuzzer's crash signatures were
    pyarrow's OSError ("Couldn't deserialize thrift", "Corrupt snappy compressed data") and
    UnicodeDecodeError of a damaged string page, each an internal error."""
    table = pa.table({"id": list(range(20)), "text": [f"The rose {i}." for i in range(20)]})
    pq.write_table(table, tmp_path / "good.parquet")
    data = (tmp_path / "good.parquet").read_bytes()
    path = tmp_path / "flipped.parquet"
    outcomes = {"read": 0, "refused": 0}
    for i in range(len(data)):
        path.write_bytes(data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1 :])
        try:
            texts = _read(path)[0]
        except CorpusError as err:
            assert "flipped.parquet" in str(err)
            outcomes["refused"] += 1
        else:
            assert all(isinstance(t, str) for t in texts)
            outcomes["read"] += 1
    assert outcomes["refused"] > len(data) // 2 and outcomes["read"] > 0
