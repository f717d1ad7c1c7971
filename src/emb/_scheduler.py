"""Connecting to a dask distributed scheduler (``--scheduler ADDRESS``), bounded in time.

dask's ``Client(address, timeout=...)`` bounds only the TCP connection: a socket that accepts the
connection and never answers dask's handshake (a frozen scheduler, a port of another service)
keeps it waiting for ever, and a service that answers something else can make it read a frame
length of exabytes (``MemoryError``).  :func:`connect_scheduler` first shakes hands with the
address once, within ``EMB_CONNECT_TIMEOUT`` (:mod:`emb.files.network`), and only then makes the
client: every failure is one :class:`~emb.errors.SchedulerError` naming the address.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from emb.errors import SchedulerError
from emb.files.network import CONNECT_TIMEOUT_ENV, network

__all__ = ["connect_scheduler"]

_WHAT_TO_DO = (
    "give the address of a running scheduler (tcp://HOST:PORT, as 'dask scheduler' prints it), "
    "or leave --scheduler out to work on this machine"
)


def connect_scheduler(address: str) -> Any:
    """A ``dask.distributed.Client`` of the scheduler at ``address``.

    Parameters
    ----------
    address : str
        The scheduler's address, ``tcp://HOST:PORT`` (or ``HOST:PORT``).

    Returns
    -------
    distributed.Client
        Connected; close it (``with client:``) when done.

    Raises
    ------
    SchedulerError
        dask.distributed is not installed; the address is malformed; nothing answers there within
        ``EMB_CONNECT_TIMEOUT`` seconds; what answers is not a dask scheduler.
    """
    try:
        from distributed import Client
    except ImportError as err:
        raise SchedulerError(
            f"--scheduler needs dask.distributed ({err}): pip install 'emb[distributed]'"
        ) from err
    timeout = network().connect_timeout
    _shake_hands(address, timeout)
    try:
        return Client(address, timeout=timeout)
    except (OSError, ValueError, TypeError) as err:  # TimeoutError is an OSError
        raise SchedulerError(
            f"cannot connect to the dask scheduler {address!r} (--scheduler): "
            f"{_one_line(err)}; {_WHAT_TO_DO}"
        ) from err


def _shake_hands(address: str, timeout: float) -> None:
    """Open one connection to ``address`` and exchange dask's handshake, all within ``timeout``
    seconds, on a loop of its own (the caller may be inside a running loop: a notebook)."""
    from distributed.comm import connect
    from distributed.security import Security

    async def once() -> None:
        args = Security().get_connection_args("client")
        comm = await asyncio.wait_for(connect(address, timeout=timeout, **args), timeout)
        await comm.close()

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="emb-scheduler") as pool:
        try:
            pool.submit(asyncio.run, once()).result()
        except TimeoutError as err:  # asyncio's and the connect loop's own (an OSError)
            raise SchedulerError(
                f"the dask scheduler {address!r} (--scheduler) did not answer within "
                f"{timeout:g} s: nothing there accepted the connection and answered dask's "
                f"handshake; {_WHAT_TO_DO} (a slow network: raise {CONNECT_TIMEOUT_ENV}, seconds)"
            ) from err
        except MemoryError as err:  # a frame length read from another protocol's bytes
            raise SchedulerError(
                f"{address!r} (--scheduler) answered, but not as a dask scheduler (its first "
                f"bytes announced a message too large to hold); {_WHAT_TO_DO}"
            ) from err
        except (OSError, ValueError, TypeError) as err:
            raise SchedulerError(
                f"cannot connect to the dask scheduler {address!r} (--scheduler): "
                f"{_one_line(err)}; {_WHAT_TO_DO}"
            ) from err


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
