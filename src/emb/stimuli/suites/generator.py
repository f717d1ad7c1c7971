"""The interface of a suite generator and its declared options (torch-free).

A generator (``vast``, ``weat``, ``similarity``, …) is a :class:`SuiteGenerator` with a name, a
description, its options as :class:`SuiteOption` records and a ``build(**options)`` method. The
CLI builds one ``--flag`` per option from these records, and messages name an option by its flag
first and its Python keyword second (:attr:`SuiteOption.spelled`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from emb._documents import show
from emb.errors import SuiteError
from emb.stimuli.suites.core import Suite

__all__ = ["SuiteGenerator", "SuiteOption"]


@dataclass(frozen=True, kw_only=True)
class SuiteOption:
    """One option of a suite generator (the CLI builds ``--<name>`` flags from these).

    Attributes
    ----------
    name
        Keyword of ``build``; the CLI flag is :attr:`flag` (``--text-field`` for ``text_field``).
    type
        ``str``, ``int``, ``float``, ``bool`` (a CLI switch) or ``pathlib.Path`` (values are
        converted to it).
    multiple
        Whether the option takes several values (a tuple).
    default
        Default value (``None``: not given).
    help
        One-line description.
    choices
        Allowed values, or ``None``.
    required
        Whether ``build`` needs a value.
    minimum
        Smallest allowed value of an ``int``/``float`` option, or ``None``.
    """

    name: str
    type: type
    multiple: bool = False
    default: Any = None
    help: str = ""
    choices: tuple[str, ...] | None = None
    required: bool = False
    minimum: float | None = None

    @property
    def flag(self) -> str:
        """The command-line flag, ``--`` and the name with ``-`` for ``_``."""
        return "--" + self.name.replace("_", "-")

    @property
    def spelled(self) -> str:
        """How messages name the option: the CLI flag first, then the Python keyword."""
        return f"{self.flag} ({self.name}= in Python)"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able description (type by name)."""
        default = list(self.default) if isinstance(self.default, tuple) else self.default
        return {
            "name": self.name,
            "flag": self.flag,
            "type": self.type.__name__,
            "multiple": self.multiple,
            "default": default if not isinstance(default, Path) else str(default),
            "help": self.help,
            "choices": list(self.choices) if self.choices else None,
            "required": self.required,
            "minimum": self.minimum,
        }

    def parse(self, value: Any) -> Any:
        """Convert a given value (a string from the CLI, or a Python value) to the option's type."""
        if value is None:
            if self.required:
                raise SuiteError(f"{self.spelled} is required: {self.help}")
            return self.default
        if self.multiple:
            values = (
                [value]
                if isinstance(value, (str, PathLike)) or not isinstance(value, Iterable)
                else list(value)
            )
            if not values and self.required:
                raise SuiteError(f"{self.spelled} needs at least one value: {self.help}")
            return tuple(self._one(v) for v in values)
        return self._one(value)

    def _one(self, value: Any) -> Any:
        kinds = {int: "a whole number", float: "a number", bool: "true or false", Path: "a path"}
        try:
            if self.type is Path:
                if not isinstance(value, (str, PathLike)):
                    raise TypeError(value)
                converted: Any = Path(value)
            elif self.type is bool:
                converted = _parse_bool(value)
            elif self.type is int:
                if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                    raise ValueError(value)
                converted = int(value)
            elif self.type is float:
                if isinstance(value, bool):
                    raise ValueError(value)
                converted = float(value)
                if not math.isfinite(converted):
                    raise ValueError(value)
            elif isinstance(value, PathLike):
                converted = str(Path(value))
            else:
                if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                    raise TypeError(value)
                converted = str(value)
        except (TypeError, ValueError, OverflowError):
            kind = kinds.get(self.type, "text")
            raise SuiteError(f"{self.spelled} must be {kind}, got {show(value)}") from None
        if self.minimum is not None and converted < self.minimum:
            raise SuiteError(
                f"{self.spelled} must be at least {show(self.minimum)}, got {show(value)}"
            )
        if self.choices is not None and converted not in self.choices:
            raise SuiteError(
                f"{self.spelled} must be one of {', '.join(self.choices)}; got {show(value)}"
            )
        return converted


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "false", "no", "0"):
        return value.strip().lower() in ("true", "yes", "1")
    raise ValueError(value)


class SuiteGenerator:
    """Interface of a suite generator: ``name``, ``description``, ``options`` and ``build``.

    Subclasses set the three class attributes and implement :meth:`build`; :meth:`parse_options`
    checks and converts the options once, at the entry point.
    """

    name: str = ""
    description: str = ""
    options: tuple[SuiteOption, ...] = ()

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
                + ", ".join(o.flag for o in self.options)
                + " ("
                + ", ".join(f"{o.name}=" for o in self.options)
                + " in Python)"
            )
        return {key: option.parse(options.get(key)) for key, option in known.items()}

    def __repr__(self) -> str:
        return f"<suite generator {self.name!r}: {', '.join(o.name for o in self.options)}>"
