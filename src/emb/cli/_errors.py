"""One place that turns emb errors into a one-line CLI error (exit status 1, no traceback), and
warnings into one line each (no source file, no line of code)."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import click

from emb.errors import EmbError, EmbWarning

__all__ = ["EmbCommand", "EmbGroup"]


@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    """Print warnings as ``warning: …`` lines on stderr: emb's own (every time, e.g. targets at
    position 0 of a causal model, words left out of a test) as they are, others with their
    category; never Python's ``file:line: Category`` and the line of code that warned."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", EmbWarning)

        def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
            tail = "" if issubclass(category, EmbWarning) else f" ({category.__name__})"
            click.echo(f"warning: {message}{tail}", err=True)

        warnings.showwarning = show
        yield


def _invoke(invoke: Any, ctx: click.Context) -> Any:
    with one_line_warnings():
        try:
            return invoke(ctx)
        except EmbError as err:
            raise click.ClickException(f"{type(err).__name__}: {err}") from err


class EmbCommand(click.Command):
    """A command whose emb errors print as ``Error: StoreError: …`` and exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        return _invoke(super().invoke, ctx)


class EmbGroup(click.Group):
    """A group whose subcommands' emb errors print as ``Error: StoreError: …`` and exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        return _invoke(super().invoke, ctx)
