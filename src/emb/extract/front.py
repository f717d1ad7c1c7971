"""The extract stage's front door: what ``emb extract`` runs, callable from Python.

:func:`extract` builds the suites a run asks for (built-in names with their options, ``(name,
{options})`` pairs, suite files, Suite objects), chooses and checks the backend that opens the
model, and runs the pipeline (:func:`emb.extract.pipeline.extract`). It is :func:`emb.api.extract`
and what calling the package does (``emb.extract("gpt2", ["weat"], "gpt2.zarr")``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from emb.extract.settings import SuiteReport
    from emb.stimuli.suites import Suite

__all__ = ["backend_option_names", "build", "extract", "suite_option_names"]


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
            out.extend(build_suites([name], {k: _as_given(v) for k, v in own.items()}))
        else:
            out.append(next(built))
    return out


def _as_given(value: Any) -> Any:
    """A Python value as the CLI hands it on (a list → a tuple of values)."""
    return tuple(value) if isinstance(value, list) else value


def extract(
    model: str | os.PathLike[str],
    suites: Any,
    store: str | os.PathLike[str],
    *,
    group_names: Sequence[str] | None = None,
    progress: bool = True,
    on_estimate: Callable[[Any], object] | None = None,
    on_note: Callable[[str], object] | None = None,
    **options: Any,
) -> list[SuiteReport]:
    """Build the suites, choose the backend that opens ``model`` and write every layer's
    embeddings into ``store``: what ``emb extract`` does.

    Parameters
    ----------
    model
        A Hugging Face model id, local directory, ``.gguf`` file, static vectors file, or what
        an installed backend opens.
    suites
        One or a list of: a built-in suite's name (``"weat"``) or a suite file, built with the
        suite options among ``options`` (shared by every named suite that declares them, as
        the CLI's flags are); a ``(name, {option: value})`` pair, built with its own options;
        or a built :class:`~emb.stimuli.suites.Suite`.
    store
        The store's path or fsspec URL (created when missing).
    group_names
        The store group of each suite (default: the suite's name; ``--name``).
    progress
        Show a progress bar.
    on_estimate, on_note
        Called with the estimate of size and time, and with each note of the run (default:
        nothing is printed).
    **options
        The pipeline's keywords (:func:`emb.extract.extract`: ``dtype``, ``storage_dtype``,
        ``batch_size``, ``device``, ``poolings``, ``layers``, ``shard``, ``bos``,
        ``bos_token``, ``overwrite``, ``dry_run`` …), the suites' options (``emb suites``) and
        the backends' options (``revision``, ``trust_remote_code``, ``format`` …).

    Returns
    -------
    list of SuiteReport
        One per suite (empty for a dry run).

    Raises
    ------
    OptionError
        An option no requested suite or backend takes, or that cannot apply.
    SuiteError, ModelError, StoreError
        From the suites, the backend and the store.
    """
    import warnings

    from emb.backends import check_options
    from emb.errors import EmbWarning
    from emb.extract.pipeline import extract as run_extract
    from emb.stimuli import suite_warnings

    backends = backend_option_names()
    backend_options = {k: options.pop(k) for k in list(options) if k in backends}
    suite_names = suite_option_names()
    suite_options = {k: options.pop(k) for k in list(options) if k in suite_names}
    built = build(suites, {k: _as_given(v) for k, v in suite_options.items()},
                  shared=backend_options)
    for line in suite_warnings(built):
        if on_note is None:
            warnings.warn(line, EmbWarning, stacklevel=2)
        else:
            on_note(line)
    backend = check_options(model, backend_options, suites=built)
    backend.quiet()
    if isinstance(options.get("poolings"), str):
        options["poolings"] = tuple(p.strip() for p in options["poolings"].split(",") if p.strip())
    return run_extract(model, built, store, names=list(group_names) if group_names else None,
                       progress=progress, on_estimate=on_estimate, on_note=on_note,
                       **options, **backend_options)
