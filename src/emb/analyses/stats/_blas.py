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
_blas_saved: list[int] = []
_blas_libs: list[Any] | None = None  # threadpoolctl library controllers of the BLAS in use


def _blas_controllers() -> list[Any]:
    global _blas_libs
    if _blas_libs is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
            _blas_libs = []
        else:
            _blas_libs = list(ThreadpoolController().select(user_api="blas").lib_controllers)
    return _blas_libs


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Context manager: BLAS runs single-threaded inside (dask already runs one kernel per core).

    Threaded BLAS inside dask's worker threads oversubscribes the cores, and OpenBLAS' spinning
    threads then make the kernels' matrix products several times slower (on 2 cores the ValNorm
    benchmark spent 2.5× the CPU time).  OpenBLAS' thread count is process-wide, so the first
    thread to enter sets it to 1 and the last one to leave restores the saved value (reference
    counted, re-entrant).  Without threadpoolctl it does nothing.

    Examples
    --------
    >>> with single_threaded_blas():
    ...     c = np.ones((2, 3)) @ np.ones((3, 2))
    """
    global _blas_users, _blas_saved
    with _blas_lock:
        libs = _blas_controllers()
        if _blas_users == 0:
            _blas_saved = [lib.get_num_threads() for lib in libs]
            for lib in libs:
                lib.set_num_threads(1)
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                for lib, n in zip(libs, _blas_saved, strict=True):
                    if n:
                        lib.set_num_threads(n)


