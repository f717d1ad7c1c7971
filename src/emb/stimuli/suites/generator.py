"""The interface of a suite generator (torch-free).

A generator (``vast``, ``weat``, ``similarity``, …) is a :class:`SuiteGenerator` with a name, a
description, its options as :class:`emb.options.Option` records and a ``build(**options)``
method. The CLI builds one ``--flag`` per option from these records, and messages name an option
by its flag first and its Python keyword second (:attr:`emb.options.Option.spelled`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from emb.errors import SuiteError
from emb.options import Option
from emb.stimuli.suites.core import Suite

__all__ = ["SuiteGenerator", "SuiteOption"]


#: The name suites' options had before one :class:`emb.options.Option` served suites, backends and
#: analyses alike (kept: it is public, in ``emb.stimuli`` and ``emb.extraction``).
SuiteOption = Option


class SuiteGenerator:
    """Interface of a suite generator: ``name``, ``description``, ``options`` and ``build``.

    Subclasses set the three class attributes and implement :meth:`build`; :meth:`parse_options`
    checks and converts the options once, at the entry point.
    """

    name: str = ""
    description: str = ""
    options: tuple[Option, ...] = ()

    def build(self, **options: Any) -> Suite:
        """Build the suite (``Suite.generator == self.name``, JSON ``Suite.parameters``)."""
        raise NotImplementedError

    def warnings(self, suite: Suite) -> tuple[str, ...]:
        """Lines the CLI prints after building ``suite`` (words left out, and why)."""
        return ()

    def parse_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """Options by name, converted, with defaults filled in.

        Raises
        ------
        SuiteError
            An unknown option (listing the known ones), a missing required one, a bad value.
        """
        known = {option.name: option for option in self.options}
        unknown = sorted(map(str, set(options) - set(known)))
        if unknown:
            raise SuiteError(
                f"suite {self.name!r} has no option(s) {', '.join(unknown)}; its options are "
                + ", ".join(o.cli_flag for o in self.options)
                + " ("
                + ", ".join(f"{o.name}=" for o in self.options)
                + " in Python)"
            )
        owner = f"suite {self.name!r}"
        return {key: option.parse(options.get(key), owner=owner, error=SuiteError)
                for key, option in known.items()}

    def __repr__(self) -> str:
        return f"<suite generator {self.name!r}: {', '.join(o.name for o in self.options)}>"
