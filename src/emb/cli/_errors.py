"""One place that turns emb errors into a one-line CLI error (exit status 1, no traceback)."""

from __future__ import annotations

from typing import Any

import click

from emb.errors import EmbError

__all__ = ["EmbCommand", "EmbGroup"]


def _invoke(invoke: Any, ctx: click.Context) -> Any:
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
