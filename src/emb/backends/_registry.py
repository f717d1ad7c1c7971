"""The table of backends, one line each, and the one place that picks the backend of a model.

:data:`BACKENDS` holds the built-in backends; :func:`available` adds those other distributions
declare in the ``emb.backends`` entry-point group (an object or class that is a
:class:`~emb.backends.base.Backend`), as xarray finds its engines. :func:`resolve` asks each
backend whether it opens a model spec (:meth:`~emb.backends.base.Backend.guess_can_open`; the
catch-all ``hf`` last), :func:`check_options` checks the options given against the backend
chosen, and :func:`load` loads the runner. Nothing here imports torch.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from emb.backends.base import Backend, Runner
from emb.backends.hf import HFBackend
from emb.backends.static import StaticBackend
from emb.errors import EmbWarning, ModelError, OptionError
from emb.options import DEVICE, DTYPE
from emb.text import unknown_names

if TYPE_CHECKING:  # pragma: no cover
    from emb.stimuli.suites import Suite

__all__ = ["BACKENDS", "ENTRY_POINT_GROUP", "available", "check_options", "load", "resolve"]

#: The entry-point group through which other distributions add backends.
ENTRY_POINT_GROUP = "emb.backends"

#: name -> the built-in backends.
BACKENDS: dict[str, Backend] = {
    backend.name: backend
    for backend in (
        StaticBackend(),
        HFBackend(),
    )
}


@functools.cache
def available() -> dict[str, Backend]:
    """The built-in backends and those installed through the ``emb.backends`` entry-point group,
    by name (read once per process; ``available.cache_clear()`` reads them again).

    An entry point that cannot be loaded, or is not a :class:`~emb.backends.base.Backend`, or
    takes a built-in backend's name, is left out with an :class:`~emb.errors.EmbWarning`.
    """
    found = dict(BACKENDS)
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {entry.name!r} ({entry.value}) of group {ENTRY_POINT_GROUP!r}"
        if entry.name in found:
            warnings.warn(f"{where} is left out: backend {entry.name!r} exists already",
                          EmbWarning, stacklevel=2)
            continue
        try:
            loaded = entry.load()
            backend = loaded() if isinstance(loaded, type) else loaded
        except Exception as error:  # noqa: BLE001 - another package's bug must not stop emb
            warnings.warn(f"{where} is left out: loading it failed ({type(error).__name__}: "
                          f"{error})", EmbWarning, stacklevel=2)
            continue
        if not isinstance(backend, Backend):
            warnings.warn(f"{where} is left out: it is a {type(backend).__name__}, not an "
                          "emb.backends.Backend", EmbWarning, stacklevel=2)
            continue
        found[entry.name] = backend
    return found


def resolve(model: str | os.PathLike[str], **options: Any) -> Backend:
    """The backend that opens ``model``: the first whose ``guess_can_open`` says so, the
    catch-all backends (``hf``: a hub id is any text) asked last.

    Parameters
    ----------
    model
        A model spec: a path or an id.
    **options
        The backends' options given (``format`` makes a file a static vectors file).

    Raises
    ------
    ModelError
        No backend opens ``model``.
    """
    spec = os.fspath(model)
    found = list(available().values())
    for backend in [b for b in found if not b.catch_all] + [b for b in found if b.catch_all]:
        if backend.guess_can_open(spec, **options):
            return backend
    raise ModelError(
        f"no backend opens {spec!r}; the backends are {', '.join(available())}"
    )


def check_options(
    model: str | os.PathLike[str], options: Mapping[str, Any], *, suites: Sequence[Suite] = ()
) -> Backend:
    """The backend that opens ``model``, after checking the backends' options given.

    An option of another backend is ignored, or refused where that backend says it cannot
    apply (:meth:`~emb.backends.base.Backend.refuse_unused`: static vectors' flags for a model
    that is no vectors file, unless a suite takes ``allow_missing``).

    Raises
    ------
    OptionError
        An option no backend declares, or one that cannot apply.
    ModelError
        No backend opens ``model``.
    """
    found = available()
    known = {o.name for backend in found.values() for o in backend.options}
    unknown = sorted(set(options) - known)
    if unknown:
        raise OptionError(unknown_names("option", unknown, sorted(known), "the backends' options"))
    chosen = resolve(model, **options)
    own = {o.name for o in chosen.options}
    for other in found.values():
        if other is chosen:
            continue
        theirs = {o.name for o in other.options} - own
        given = {k: v for k, v in options.items() if k in theirs}
        if given:
            other.refuse_unused(given, suites)
    return chosen


def load(
    model: str | os.PathLike[str],
    suites: Sequence[Suite] = (),
    *,
    dtype: str = DTYPE.default,
    device: str = DEVICE.default,
    layers: Any = None,
    **options: Any,
) -> Runner:
    """Load ``model`` with the backend that opens it (:func:`resolve`), for ``suites``.

    Parameters
    ----------
    model
        A model spec (hub id, directory, ``.gguf`` file, static vectors file, or what an
        installed backend opens).
    suites
        The suites the runner will embed (a static vectors file keeps only their words).
    dtype, device
        The run's compute dtype and device.
    layers
        The run's ``--layers``, passed to a backend that takes it
        (:attr:`~emb.backends.base.Backend.takes_layers`).
    **options
        The backends' options (:attr:`~emb.backends.base.Backend.options`); the chosen
        backend gets its own, and another backend's are ignored or refused
        (:func:`check_options`).

    Raises
    ------
    OptionError, ModelError
        See :func:`check_options` and the backend's ``load``.
    """
    backend = check_options(model, options, suites=suites)
    own = {o.name for o in backend.options}
    return backend.load(
        os.fspath(model), suites=suites, dtype=dtype, device=device,
        **({"layers": layers} if backend.takes_layers and layers is not None else {}),
        **{k: v for k, v in options.items() if k in own},
    )
