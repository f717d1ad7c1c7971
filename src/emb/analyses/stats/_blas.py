"""BLAS threads inside dask: one thread per task while dask runs tasks in parallel."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["single_threaded_blas"]

# --------------------------------------------------------------------------------------------
# BLAS threads inside dask
# --------------------------------------------------------------------------------------------

_blas_lock = threading.Lock()
_blas_users = 0
_blas_saved: list[tuple[Any, int]] = []  # (library controller, its thread count) at first entry


def _blas_controllers() -> list[Any]:
    """The BLAS libraries loaded now (numpy's and scipy's OpenBLAS are two copies; scipy's is
    loaded only when scipy.linalg is first used, so the list is taken afresh, ~1 ms)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl is a declared dependency
        return []
    return list(ThreadpoolController().select(user_api="blas").lib_controllers)


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Context manager: BLAS runs single-threaded inside (dask already runs one kernel per core).

    Threaded BLAS inside dask's worker threads oversubscribes the cores, and OpenBLAS' spinning
    threads then make the kernels' matrix products several times slower (on 2 cores the ValNorm
    benchmark spent 2.5× the CPU time); a thread count changed by one task while another task's
    product runs also makes results vary in their last bits from run to run. OpenBLAS' thread
    count is process-wide, so the first thread to enter sets every loaded BLAS to 1 and the last
    one to leave restores the saved values (reference counted, re-entrant); the CLI holds it
    around a whole computation. Without threadpoolctl it does nothing.

    Examples
    --------
    >>> import numpy as np
    >>> with single_threaded_blas():
    ...     c = np.ones((2, 3)) @ np.ones((3, 2))
    """
    global _blas_users, _blas_saved
    with _blas_lock:
        if _blas_users == 0:
            _blas_saved = [(lib, lib.get_num_threads()) for lib in _blas_controllers()]
        # every entry, not only the first: code outside (threadpoolctl's own limits, a library
        # that sets its threads) may have changed the count since the first one entered
        for lib, _ in _blas_saved:
            lib.set_num_threads(1)
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                for lib, n in _blas_saved:
                    if n:
                        lib.set_num_threads(n)
                _blas_saved = []
