"""What the front door (:func:`emb.api.extract`, ``emb extract``) asks of the extract stage: the
suites a run names, built (built-in names with their options, ``(name, {options})`` pairs, suite
files, Suite objects), and the names of the options the suites and the backends declare, by which
a run's options are sorted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from emb.stimuli.suites import Suite

__all__ = ["as_given", "backend_option_names", "build", "suite_option_names"]


def backend_option_names() -> set[str]:
    """Every option a backend declares (:func:`emb.backends.available`)."""
    from emb.backends import available

    return {o.name for backend in available().values() for o in backend.options}


def suite_option_names() -> set[str]:
    """Every option a built-in suite declares."""
    from emb.stimuli.suites import BUILTIN_SUITES

    return {o.name for generator in BUILTIN_SUITES.values() for o in generator.options}


def build(suites: Any, options: Mapping[str, Any], *,
          shared: Mapping[str, Any] | None = None) -> list[Suite]:
    """The suites of a run, in the order given (see :func:`extract`'s ``suites``); ``options``
    the suites' shared options, ``shared`` the backends' options that suites take too."""
    from emb.stimuli import build_suites
    from emb.stimuli.suites import Suite

    shared = dict(shared or {})

    specs = [suites] if isinstance(suites, str | os.PathLike | Suite | tuple) else list(suites)
    given = dict(options)
    for name, value in shared.items():  # a suite's option too (ceat's allow_missing)
        if name in suite_option_names():
            given[name] = value or None
    plain = [os.fspath(s) for s in specs if isinstance(s, str | os.PathLike)]
    built = iter(build_suites(plain, given, shared=shared))
    out = []
    for spec in specs:
        if isinstance(spec, Suite):
            out.append(spec)
        elif isinstance(spec, tuple):
            name, own = spec
            out.extend(build_suites([name], {k: as_given(v) for k, v in own.items()}))
        else:
            out.append(next(built))
    return out


def as_given(value: Any) -> Any:
    """A Python value as the CLI hands it on (a list → a tuple of values)."""
    return tuple(value) if isinstance(value, list) else value
