"""One place that turns errors into a one-line CLI error, and warnings into one line each (no
source file, no line of code).

Exit statuses: 1 for an emb error (bad input, a damaged or missing store; ``emb validate`` has
its own 0/1/2), 2 for a usage error (click's), and :data:`INTERNAL_ERROR` (3) when emb could not
finish for another reason: it ran out of memory, or an unexpected exception (a bug) reached the
CLI. A reader that stops reading emb's output (``emb suites | head -1``) ends it quietly with
status 1 (click's handling of a broken pipe), never an "internal error". No traceback is printed unless the environment variable ``EMB_DEBUG`` is set (not ``0``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import sys
import traceback
import warnings
from collections.abc import Iterator
from typing import Any

import click

from emb.errors import EmbError, EmbWarning

__all__ = ["INTERNAL_ERROR", "EmbCommand", "EmbGroup"]

#: exit status of a command that ran out of memory or met an unexpected exception
INTERNAL_ERROR = 3


class _Failure(click.ClickException):
    """A one-line failure with its own exit status."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _debug() -> bool:
    return os.environ.get("EMB_DEBUG", "").strip() not in ("", "0")


@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    """Print warnings as ``warning: …`` lines on stderr: emb's own (every time, e.g. targets at
    position 0 of a causal model, words left out of a test) as they are, others with their
    category; never Python's ``file:line: Category`` and the line of code that warned.

    numpy's floating-point warnings (0/0 of identical vectors, a variance of one value) name no
    input and no remedy: they become one plain line per command (shown as they are with
    ``EMB_DEBUG``); the numbers they concern are NaN in the results, which say why."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", EmbWarning)
        undefined_said = False

        def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
            nonlocal undefined_said
            if issubclass(category, RuntimeWarning) and not _debug() and str(message).startswith(
                _UNDEFINED_NUMBERS
            ):
                if undefined_said:
                    return
                undefined_said = True
                message, category = (
                    "some numbers are undefined (0/0, or a spread of fewer than two values, as "
                    "identical vectors, a constant score or a cell with too few words give); "
                    "they are NaN in the results, and the summary says where", EmbWarning)
            tail = "" if issubclass(category, EmbWarning) else f" ({category.__name__})"
            click.echo(f"warning: {message}{tail}", err=True)

        warnings.showwarning = show
        yield


#: How numpy's floating-point RuntimeWarnings begin (0/0, x/0, statistics of empty or one-value
#: slices): numbers made NaN, not an error of the input.
_UNDEFINED_NUMBERS = (
    "invalid value encountered in", "divide by zero encountered in", "Degrees of freedom <= 0",
    "Mean of empty slice", "All-NaN slice encountered", "All-NaN axis encountered",
)


def _settle_store_io() -> None:
    """After a failed run, cancel the store I/O still in flight on zarr's event loop and let it
    unwind there, then keep what is left of it quiet as the interpreter exits.

    A read or write that fails (an S3 server that died mid-run) ends the run while zarr's other
    requests of the same batch are still pending on its I/O thread. Left alone, they are destroyed
    at exit: asyncio logs "Task was destroyed but it is pending!" and a coroutine closed outside
    its own context (aiobotocore's) prints an "Exception ignored in" traceback after emb's one-line
    error. Cancelled on their own loop, they unwind in their own context and print nothing; what
    still remains is shown only with ``EMB_DEBUG``.
    """
    store = sys.modules.get("emb.store")  # never imports the store (nor zarr): a run that did
    io_loop = getattr(store, "io_loop", None)  # not load it has nothing pending on zarr's loop
    loop = io_loop() if io_loop is not None else None
    if loop is not None and loop.is_running() and not loop.is_closed():

        async def cancel_pending() -> None:
            tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=2.0)

        with contextlib.suppress(Exception):  # a loop stopping as we ask: nothing left to settle
            asyncio.run_coroutine_threadsafe(cancel_pending(), loop).result(timeout=3.0)
    if not _debug():
        sys.unraisablehook = lambda unraisable: None


def _quiet_asyncio() -> None:
    """Keep asyncio's own log (a traceback on stderr) out of a run, unless ``EMB_DEBUG``.

    The event loops of the store's I/O (zarr's, s3fs's aiohttp) log through the ``asyncio``
    logger, and Python prints an unconfigured logger's errors with their traceback. A request
    whose connection closes under it (an S3 server that died) leaves aiohttp's writing task with
    an exception nobody retrieves; when it is collected, mid-run, asyncio logs "Task exception was
    never retrieved" and the traceback (seen on CI), before emb's own one-line error. The failure
    itself reaches emb through the request, which says it in one line.
    """
    if not _debug():
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)


def _invoke(invoke: Any, ctx: click.Context) -> Any:
    _quiet_asyncio()
    try:
        return _one_line(invoke, ctx)
    except BaseException:
        _settle_store_io()
        raise


def _one_line(invoke: Any, ctx: click.Context) -> Any:
    with one_line_warnings():
        try:
            return invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, EOFError):
            raise  # click's own: usage errors, --help, exits, "Aborted!"
        except EmbError as err:
            if _debug():
                traceback.print_exception(err)
            raise click.ClickException(f"{type(err).__name__}: {err}") from err
        except MemoryError as err:
            if _debug():
                traceback.print_exception(err)
            raise _Failure(
                f"ran out of memory ({type(err).__name__}: {err or 'no detail'}): lower the sizes "
                "(emb extract: --batch-size; emb analyze: fewer stores, --n-permutations), or "
                "compute on a dask cluster with 'emb analyze … --scheduler ADDRESS'",
                INTERNAL_ERROR,
            ) from err
        except BrokenPipeError as err:
            if not _output_closed():  # a socket's, say: unexpected, as below
                raise _internal(err) from err
            raise  # the reader of emb's output has gone (emb suites | head -1): click's main
            # exits 1 without a word (its EPIPE handling), as Unix tools stop quietly
        except Exception as err:  # noqa: BLE001 - the last resort: one line, never a traceback
            raise _internal(err) from err


def _internal(err: Exception) -> _Failure:
    """The one-line "internal error" of an unexpected exception (a bug)."""
    if _debug():
        traceback.print_exception(err)
    see = "" if _debug() else "; set EMB_DEBUG=1 to see the traceback"
    return _Failure(
        f"internal error: {type(err).__name__}: {err}\nplease report this with the "
        f"command{see}",
        INTERNAL_ERROR,
    )


def _output_closed() -> bool:
    """Whether stdout or stderr is a pipe whose reader has gone (poll reports an error on the
    write end of a pipe with no reader; a file or a terminal never does). Without poll (Windows)
    a broken pipe is taken to be the output's, by far the common case."""
    if not hasattr(select, "poll"):
        return True
    for stream in (sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):  # replaced by a test runner, or closed
            continue
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        if any(events & select.POLLERR for _, events in poller.poll(0)):
            return True
    return False


class EmbCommand(click.Command):
    """A command whose emb errors print as ``Error: StoreError: …`` and exit 1, whose earlier
    flags (``deprecated_flags``: old → new) still work with a warning, and whose "did you mean"
    for an unknown flag compares names, not dashes (:func:`emb.cli._options.close_options`)."""

    deprecated_flags: dict[str, str] | None = None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from emb.cli._options import close_options, rename_deprecated

        try:
            return super().parse_args(ctx, rename_deprecated(self, args))
        except click.NoSuchOption as err:
            err.possibilities = close_options(self, ctx, err.option_name)
            raise

    def invoke(self, ctx: click.Context) -> Any:
        return _invoke(super().invoke, ctx)


class EmbGroup(click.Group):
    """A group whose subcommands' emb errors print as ``Error: StoreError: …`` and exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        return _invoke(super().invoke, ctx)
