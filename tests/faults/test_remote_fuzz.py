"""Fuzzing what emb reads from remote servers and the network settings (hypothesis, bounded).

- ``EMB_CONNECT_TIMEOUT`` / ``EMB_READ_TIMEOUT`` / ``EMB_RETRIES``: any text is a setting or one
  ``SettingError``;
- an HTTP server answering anything (any status, any body, Range honoured or not, a body shorter
  than announced, a connection closed without an answer): opening, describing and validating a
  store there either works or raises an ``EmbError``, never another exception;
- ``s3://`` URLs with any bucket and key names on a real S3 server (moto): the same.

Every crash signature found is kept below as an explicit case.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import emb
from emb.errors import EmbError, SettingError, StoreError
from emb.files.network import network
from emb.store.validate import validate_store
from tests._servers import environment, handler_server, s3_environment

pytest.importorskip("aiohttp", reason="aiohttp is not installed (pip install -e '.[test]')")

FAST = {"EMB_CONNECT_TIMEOUT": "1", "EMB_READ_TIMEOUT": "1", "EMB_RETRIES": "1"}
ROOT = json.dumps({"zarr_format": 3, "node_type": "group",
                   "attributes": {"emb_schema_version": 2}}).encode()


@pytest.fixture(autouse=True)
def _no_s3fs_left_behind() -> Iterator[None]:
    """s3fs caches its file systems by their arguments, not by the endpoint in the environment:
    one made here against this module's servers must not serve another test later."""
    yield
    import gc

    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    gc.collect()  # their aiohttp sessions closed now, while the loops they were made on run


# -- the settings -----------------------------------------------------------------------------------
_SETTING_TEXT = st.one_of(
    st.none(),  # what an environment can hold: no NUL, no lone surrogates
    st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=12),
    st.sampled_from(["0", "-1", "1e9", "nan", "inf", "3", " 2.5 ", "٣", "0x10", "21", "1_0"]),
)


@settings(max_examples=200, deadline=None)
@given(_SETTING_TEXT, _SETTING_TEXT, _SETTING_TEXT)
def test_any_network_setting_is_a_setting_or_one_error(connect, read, retries):
    with environment({"EMB_CONNECT_TIMEOUT": connect, "EMB_READ_TIMEOUT": read,
                   "EMB_RETRIES": retries}):
        try:
            found = network()
        except SettingError as err:
            assert "\n" not in str(err) and "EMB_" in str(err)
            return
    assert 0 < found.connect_timeout <= 86_400 and 0 < found.read_timeout <= 86_400
    assert 0 <= found.retries <= 20 and found.tries == found.retries + 1


# -- an HTTP server that answers anything -------------------------------------------------------------
@dataclass
class Answer:
    """How the fuzzing server answers every request of one example."""

    status: int = 200
    body: bytes = ROOT
    ranges: bool = True  # answer Range requests with 206 and the slice
    short: bool = False  # announce more bytes than are sent, then close
    close: bool = False  # close the connection without an answer
    index: bool = False  # answer a directory ("…/") with an index page linking zarr.json


class _Fuzzing(BaseHTTPRequestHandler):
    answer = Answer()
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        answer = type(self).answer
        if answer.close:
            self.close_connection = True
            return
        body, status = answer.body, answer.status
        if answer.index and self.path.endswith("/"):
            body, status = b'<html><a href="zarr.json">zarr.json</a> <a href="s/">s/</a></html>', 200
        headers = {}
        wanted = self.headers.get("Range", "")
        if answer.ranges and status == 200 and wanted.startswith("bytes="):
            first, _, last = wanted[len("bytes="):].partition("-")
            if first.isdigit():
                end = int(last) + 1 if last.isdigit() else len(body)
                part = body[int(first):end]
                headers["Content-Range"] = f"bytes {first}-{int(first) + max(len(part) - 1, 0)}/{len(body)}"
                body, status = part, 206
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body) + (7 if answer.short else 0)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        if answer.short:
            self.close_connection = True

    do_HEAD = do_GET  # noqa: N815

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass


@pytest.fixture(scope="module")
def fuzz_server() -> Iterator[str]:
    with handler_server(_Fuzzing) as url:
        yield url


_ANSWERS = st.builds(
    Answer,
    status=st.sampled_from([200, 206, 301, 302, 400, 401, 403, 404, 410, 416, 429, 500, 503]),
    body=st.one_of(st.just(ROOT), st.binary(max_size=200),
                   st.text(max_size=60).map(str.encode),
                   st.just(b'{"zarr_format": 3, "node_type": "array"}')),
    ranges=st.booleans(), short=st.booleans(), close=st.booleans(), index=st.booleans(),
)


def _read(url: str) -> None:
    """What emb info and emb validate do with a URL; only emb's errors may come out."""
    try:
        store = emb.open_store(url)
        store.info()
    except EmbError:
        pass
    try:
        validate_store(url)
    except EmbError:
        pass


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=_ANSWERS, name=st.sampled_from(["toy.zarr", "toy.zarr.zip"]))
def test_an_http_server_answering_anything_ends_in_an_emb_error(fuzz_server, answer, name):
    _Fuzzing.answer = answer
    with environment(FAST):
        _read(f"{fuzz_server}/{name}")


# -- S3 names ---------------------------------------------------------------------------------------
_NAME = st.text(alphabet=st.sampled_from("abcXYZ019-._ /%?#~é"), min_size=1, max_size=12)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bucket=_NAME, key=_NAME)
def test_any_s3_bucket_and_key_name_ends_in_an_emb_error(moto_endpoint, bucket, key):
    with s3_environment(moto_endpoint), environment(FAST):
        _read(f"s3://{bucket}/{key}")


# -- crash signatures the fuzzers found, kept --------------------------------------------------------
@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        # fsspec streams a file of unknown or zero size; zipfile then seeks it (ValueError)
        (Answer(status=200, body=b"", ranges=False), "gives no size for it (an empty file"),
        # fsspec refuses a seek before byte 0 with ValueError, which zipfile does not expect
        (Answer(status=200, body=b"\x00", ranges=False), "is not a zip file (1 bytes"),
    ],
)
def test_found_an_http_zip_too_small_to_be_one(fuzz_server, answer, needle):
    _Fuzzing.answer = answer
    with environment(FAST), pytest.raises(StoreError, match=re.escape(needle)):
        emb.open_store(f"{fuzz_server}/toy.zarr.zip")


def test_found_an_s3_bucket_name_botocore_refuses(moto_endpoint):
    """botocore checks bucket names before sending (ParamValidationError, was exit 3)."""
    with s3_environment(moto_endpoint), environment(FAST):
        with pytest.raises(StoreError, match=r"cannot use s3://\?/0: .*Invalid bucket name"):
            emb.open_store("s3://?/0")
        with pytest.raises(StoreError, match="Invalid bucket name"):
            validate_store("s3://?/0")
