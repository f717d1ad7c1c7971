"""How long emb waits for a remote server, and how often it asks again.

Every remote call emb makes (object storage, an HTTP server, a dask scheduler) is bounded by two
timeouts and retried a bounded number of times, set by environment variables:

- ``EMB_CONNECT_TIMEOUT`` (seconds, default 10): to open a connection;
- ``EMB_READ_TIMEOUT`` (seconds, default 60): to wait for the next bytes of an answer;
- ``EMB_RETRIES`` (default 2): how many times a request that failed on the way (a timeout, a
  refused or dropped connection, a 5xx answer, throttling) is sent again, so a request is tried at
  most ``1 + EMB_RETRIES`` times.  Only requests that may be repeated are: reads, and writes of a
  whole object (the same PUT twice leaves the same object; a conditional create that finds its own
  object counts as created, see :func:`emb.store.shards.create_once`).

A server that stops answering therefore fails a command after about ``(1 + EMB_RETRIES) ×
EMB_READ_TIMEOUT`` seconds, with one line naming the URL and what to do.  A write has no socket
timeout of its own (aiohttp bounds reads only: a frozen server whose buffers are full would take
an upload's bytes for ever), so a whole write, retries included, is bounded by
:meth:`Network.write_limit`: each try may take the connect and read timeouts plus one second per
MiB written.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from emb.errors import SettingError

__all__ = ["CONNECT_TIMEOUT_ENV", "READ_TIMEOUT_ENV", "RETRIES_ENV", "Network", "network"]

CONNECT_TIMEOUT_ENV = "EMB_CONNECT_TIMEOUT"
READ_TIMEOUT_ENV = "EMB_READ_TIMEOUT"
RETRIES_ENV = "EMB_RETRIES"
_MAX_SECONDS = 86_400.0  # a day: beyond that a "timeout" is a typo
_MAX_RETRIES = 20


@dataclass(frozen=True, kw_only=True)
class Network:
    """The timeouts (seconds) and retries of every remote call."""

    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    retries: int = 2

    @property
    def tries(self) -> int:
        """How many times one request is sent at most."""
        return 1 + self.retries

    def write_limit(self, nbytes: int) -> float:
        """Seconds one write of ``nbytes`` bytes may take, all its tries together."""
        return self.tries * (self.connect_timeout + self.read_timeout + nbytes / 2**20)

    def describe(self) -> str:
        """``"connect 10 s, read 60 s, 3 tries"``: the limits a failure message quotes."""
        tries = f"{self.tries} {'try' if self.tries == 1 else 'tries'}"
        return f"connect {self.connect_timeout:g} s, read {self.read_timeout:g} s, {tries}"


def network() -> Network:
    """The settings of the environment (``EMB_CONNECT_TIMEOUT``, ``EMB_READ_TIMEOUT``,
    ``EMB_RETRIES``), each defaulting to :class:`Network`'s.

    Raises
    ------
    SettingError
        A variable is set to something other than a positive number of seconds (timeouts) or a
        whole number from 0 to 20 (retries).
    """
    default = Network()
    return Network(
        connect_timeout=_seconds(CONNECT_TIMEOUT_ENV, default.connect_timeout),
        read_timeout=_seconds(READ_TIMEOUT_ENV, default.read_timeout),
        retries=_retries(default.retries),
    )


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None or not value.strip() else value.strip()


def _seconds(name: str, default: float) -> float:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (0 < value <= _MAX_SECONDS):
        raise SettingError(
            f"{name}={raw!r} is not a timeout: give a number of seconds above 0 and at most "
            f"{_MAX_SECONDS:g} (e.g. {name}={default:g}, the default), or unset it"
        )
    return value


def _retries(default: int) -> int:
    raw = _raw(RETRIES_ENV)
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit()) or int(raw) > _MAX_RETRIES:
        raise SettingError(
            f"{RETRIES_ENV}={raw!r} is not a number of retries: give a whole number from 0 to "
            f"{_MAX_RETRIES} (e.g. {RETRIES_ENV}={default}, the default), or unset it"
        )
    return int(raw)
