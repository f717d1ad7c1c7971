"""Options declared once: the one :class:`Option` record of suites, backends, the extraction and
analyses.

A suite generator (:class:`emb.stimuli.suites.SuiteGenerator`), a backend
(:class:`emb.backends.Backend`), the extraction pipeline (:data:`emb.extraction.options.OPTIONS`)
and an analysis (:class:`emb.analyses.Analysis`) each declare the keyword options they take as
:class:`Option` records, the way scikit-learn declares ``_parameter_constraints``. From those
records alone

- the CLI generates its flags (``emb extract --contexts``, ``emb extract --batch-size``, ``emb
  analyze weat --alternative``: :mod:`emb.cli._options`), with the declared choices and bounds,
  and a command line is spelled back from values (:meth:`Option.argv`);
- one validator (:meth:`Option.parse` for values that may need converting, :meth:`Option.check`
  for values an analysis function got) refuses a bad value with one message, the same from
  Python and from the CLI: ``"--alternative (alternative= in Python) of weat must be one of
  greater, less, two-sided; got 'bigger'"``.

The options most analyses share (``alternative``, ``correction``, ``ddof``, ``n_permutations``,
``seed``, the LinearSVC's ``C`` and ``cv_folds``) are declared here once; a family takes one as it
is, or with its own help (``DDOF.but(help=...)``). So are those the extraction pipeline shares
with the backends' runners below it (``dtype``, ``device``, ``batch_size``), whose defaults the
runners' signatures read from here. This module sits on the ground floor: it imports nothing of
emb but the errors and the text helpers.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any, Literal

import numpy as np

from emb.errors import EmbError, OptionError
from emb.files.documents import show

__all__ = [
    "ALTERNATIVE",
    "BATCH_SIZE",
    "CORRECTION",
    "CV_FOLDS",
    "C_SVC",
    "DDOF",
    "DEVICE",
    "DTYPE",
    "FIGURE_FORMATS",
    "MAX_BOOTSTRAP",
    "MAX_COUNT",
    "MAX_PERMUTATIONS",
    "MAX_SEED",
    "METHOD",
    "MIN_WORDS",
    "NO_PLOTS",
    "N_PERMUTATIONS",
    "OUT",
    "OVERWRITE",
    "REFERENCE",
    "RELATIVE_DEPTH",
    "SEED",
    "SEED_32",
    "STANDARDIZE",
    "STORES",
    "SUITE",
    "TABLE_FORMAT",
    "WORD_SET",
    "Option",
    "check_values",
]

OptionType = Literal["str", "int", "float", "bool", "path", "layer"]

#: Largest value of an integer option (counts: permutations, samples, replicates, folds …) unless
#: its :class:`Option` declares a smaller ``high``: beyond it a run would not end, or not fit in
#: memory, on any machine.
MAX_COUNT = 10**9
#: Largest seed: what a signed 64-bit attribute of the written netCDF can hold.
MAX_SEED = 2**63 - 1
#: Most random splits of a Monte-Carlo permutation test (``--n-permutations``) and most splits
#: enumerated for an exact one (``--exact-limit``). A Monte-Carlo p is never below its floor
#: 1/(N+1) and has the standard error sqrt(p(1-p)/N): at N = 10^7 the floor is 1e-7 and the
#: standard error of p = 0.05 is 7e-5 (0.14 % of it), of p = 5e-6 (a Bonferroni threshold over
#: 10,000 tests) 7e-7, so no reported decision needs more; and 10^7 splits of 50 words already
#: take about a minute per 10 layer x pooling cells on one core.
MAX_PERMUTATIONS = 10_000_000
#: Most bootstrap replicates (``--n-bootstrap``): the Monte-Carlo error of a 95 % percentile
#: interval's bounds shrinks as 1/sqrt(B); at 10^5 it is a few thousandths of the interval's
#: width, 10x below the 10^4 replicates usually recommended (Efron & Tibshirani 1993).
MAX_BOOTSTRAP = 100_000

_TYPE_NAMES: dict[Any, str] = {str: "str", int: "int", float: "float", bool: "bool", Path: "path"}
_KINDS = {"bool": "true or false", "path": "a path", "str": "text", "layer": "a layer"}


@dataclass(frozen=True, kw_only=True)
class Option:
    """One keyword option of a suite generator, a backend or an analysis function.

    The default is read from the function's signature when the option is a keyword of one (an
    analysis); a generator or backend whose ``build``/``load`` takes ``**options`` declares it.

    Attributes
    ----------
    name : str
        The keyword.
    type : {"str", "int", "float", "bool", "path", "layer"}
        Value type (``str``, ``int``, ``float``, ``bool`` and ``pathlib.Path`` are accepted and
        stored by name). ``bool`` options are CLI switches; ``layer`` takes an integer or a word
        such as ``top``/``best``/``mean``; ``path`` values are converted to :class:`~pathlib.Path`.
    help : str
        One line for ``--help`` (defaults are shown from the declaration, never repeated here).
    multiple : bool
        The option takes several values (``--setting bleached --setting aligned``; comma-separated
        values are split too for an analysis).
    choices : tuple of str, optional
        Allowed values (shown in ``--help``; a wrong one gets a "did you mean").
    flag : str, optional
        The CLI flag (default ``--`` + name with ``_`` → ``-``; singular for a ``multiple`` option
        whose name ends in ``s``, not ``ss``/``us``: ``settings`` → ``--setting``).
    metavar : str, optional
        The value's name in ``--help``.
    aliases : tuple of str
        Further flags for the same option, shown in ``--help``.
    deprecated : tuple of str
        Earlier flags of the option (one concept, one name across emb's commands: see
        ``docs/rules/options-and-warnings.md``): still accepted, hidden from ``--help``, and
        warned about once per run with the one name to use.
    low, high : number, optional
        Bounds of an ``int`` or ``float`` option (inclusive unless ``low_open``/``high_open``).
        An ``int`` option's default bounds are 0 and :data:`MAX_COUNT` (``high=math.inf``: no
        upper bound); a ``float`` option must be finite. The CLI and the function refuse a value
        outside them with one message.
    default : any
        The default of an option that is no keyword of a signature (``None``: not given).
    required : bool
        Whether a value must be given.
    parser : callable, optional
        For a value no type, choices and bounds describe (a device, a shard ``I/N``, a list of
        layers): converts a given value (a string of the CLI or a Python value, or one it
        returned before) and raises ``ValueError`` or ``TypeError`` on one it refuses, which
        :meth:`parse` turns into the one message.
    expects : str, optional
        What a value must be, in words, for the message (default: from the type, choices and
        bounds).
    cli : bool
        Whether the option has a flag (False: a keyword of the Python API only, named so in
        messages: ``window_blocks=``).
    """

    name: str
    type: OptionType = "str"
    help: str = ""
    multiple: bool = False
    choices: tuple[str, ...] | None = None
    flag: str | None = None
    metavar: str | None = None
    aliases: tuple[str, ...] = ()
    deprecated: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    default: Any = None
    required: bool = False
    parser: Callable[[Any], Any] | None = dataclasses.field(default=None, repr=False, compare=False)
    expects: str | None = None
    cli: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.type, str):
            if self.type not in _TYPE_NAMES:
                raise TypeError(f"option {self.name!r}: type {self.type!r} is none of "
                                f"{', '.join(t.__name__ for t in _TYPE_NAMES)}")
            object.__setattr__(self, "type", _TYPE_NAMES[self.type])

    def but(self, **changes: Any) -> Option:
        """A copy with ``changes`` (a shared declaration with a family's own help or bounds)."""
        return dataclasses.replace(self, **changes)

    # -- what the option allows ----------------------------------------------------------------
    @property
    def bounds(self) -> tuple[float | None, float | None]:
        """The (low, high) bounds in force (an ``int`` option's defaults: 0 and MAX_COUNT)."""
        if self.type == "int":
            return (0 if self.low is None else self.low,
                    MAX_COUNT if self.high is None else self.high)
        return self.low, self.high

    @property
    def range_text(self) -> str:
        """The allowed values in words: ``an integer from 2 to 1,000,000,000``."""
        low, high = self.bounds
        if self.type == "int":
            return f"an integer >= {low:,}" if high == math.inf else f"an integer from {low:,} to {high:,}"
        return "a finite number" + (f" {self.float_bounds}" if self.float_bounds else "")

    @property
    def float_bounds(self) -> str:
        """A ``float`` option's bounds as ``> 0 and <= 0.5`` (empty when it has none)."""
        low, high = self.bounds
        return " and ".join(t for t in (
            low is not None and f"{'>' if self.low_open else '>='} {low:g}",
            high is not None and f"{'<' if self.high_open else '<='} {high:g}") if t)

    @property
    def expected(self) -> str:
        """What a value must be, in words (the validator's message)."""
        if self.expects is not None:
            return self.expects
        if self.choices is not None:
            return "one of " + ", ".join(self.choices)
        if self.type in ("int", "float"):
            return self.range_text
        return _KINDS[self.type]

    def in_range(self, value: Any) -> bool:
        """Whether ``value`` has the option's numeric type and lies within its bounds."""
        if isinstance(value, bool):
            return False
        if self.type == "int":
            if not isinstance(value, int | np.integer):
                return False
        elif not isinstance(value, int | float | np.integer | np.floating) or not math.isfinite(value):
            return False
        low, high = self.bounds
        if low is not None and (value <= low if self.low_open else value < low):
            return False
        return not (high is not None and (value >= high if self.high_open else value > high))

    # -- how it is named -----------------------------------------------------------------------
    @property
    def cli_flag(self) -> str:
        """The flag as typed on the command line."""
        if self.flag:
            return self.flag
        name = self.name
        if self.multiple and name.endswith("s") and not name.endswith(("ss", "us")):
            name = name[:-1]
        return "--" + name.replace("_", "-")

    @property
    def spelled(self) -> str:
        """How messages name the option: the CLI flag first, then the Python keyword (the
        keyword alone for an option without a flag)."""
        return f"{self.cli_flag} ({self.name}= in Python)" if self.cli else f"{self.name}="

    def argv(self, value: Any) -> list[str]:
        """The command-line arguments that give ``value`` (the CLI's spelling of a run's value):
        a switch, or its ``--no-`` form, for a ``bool``; the flag and each value of a
        ``multiple`` option; the flag and the value otherwise."""
        if self.type == "bool":
            return [self.cli_flag if value else "--no-" + self.cli_flag.removeprefix("--")]
        values = list(value) if self.multiple and isinstance(value, list | tuple) else [value]
        return [arg for v in values for arg in (self.cli_flag, str(v))]

    def message(self, value: Any, *, owner: str | None = None) -> str:
        """The one message of a refused value: what is wrong, what was found (and so what to
        give): ``--seed (seed= in Python) of weat must be an integer from 0 to …; got -1``."""
        of = f" of {owner}" if owner else ""
        return f"{self.spelled}{of} must be {self.expected}; got {show(value)}"

    # -- the validator -------------------------------------------------------------------------
    def check(self, value: Any, *, owner: str | None = None,
              error: type[EmbError] = OptionError) -> Any:
        """``value`` unchanged when it is allowed (its choices, its numeric bounds, its parser);
        ``error`` with :meth:`message` otherwise. Nothing is converted (see :meth:`parse`)."""
        if self.parser is not None:
            if value is not None:
                self.parse(value, owner=owner, error=error)
        elif self.choices is not None and not self.multiple:
            if not isinstance(value, str) or value not in self.choices:
                raise error(self.message(value, owner=owner))
        elif self.type in ("int", "float") and not self.multiple and not self.in_range(value):
            raise error(self.message(value, owner=owner))
        return value

    def parse(self, value: Any, *, owner: str | None = None,
              error: type[EmbError] = OptionError) -> Any:
        """A given value (a string of a file or the CLI, or a Python value) converted to the
        option's type and checked; None → the declared default (``error`` if required)."""
        if value is None:
            if self.required:
                raise error(f"{self.spelled} is required: {self.help}")
            return self.default
        if self.parser is not None:
            try:
                return self.parser(value)
            except (TypeError, ValueError, OverflowError):
                raise error(self.message(value, owner=owner)) from None
        if self.multiple:
            values = (
                [value]
                if isinstance(value, (str, PathLike)) or not isinstance(value, Iterable)
                else list(value)
            )
            if not values and self.required:
                raise error(f"{self.spelled} needs at least one value: {self.help}")
            return tuple(self._one(v, owner, error) for v in values)
        return self._one(value, owner, error)

    def _one(self, value: Any, owner: str | None, error: type[EmbError]) -> Any:
        try:
            converted = _convert(self.type, value)
        except (TypeError, ValueError, OverflowError):
            raise error(self.message(value, owner=owner)) from None
        if self.type in ("int", "float") and not self.in_range(converted):
            raise error(self.message(value, owner=owner))
        if self.choices is not None and converted not in self.choices:
            raise error(self.message(value, owner=owner))
        return converted

    def to_dict(self) -> dict[str, Any]:
        """JSON-able description."""
        default = list(self.default) if isinstance(self.default, tuple) else self.default
        return {
            "name": self.name,
            "flag": self.cli_flag,
            "type": self.type,
            "multiple": self.multiple,
            "default": default if not isinstance(default, Path) else str(default),
            "help": self.help,
            "choices": list(self.choices) if self.choices else None,
            "required": self.required,
            "bounds": ([None if b == math.inf else b for b in self.bounds]
                       if self.type in ("int", "float") else None),
        }


def _convert(kind: str, value: Any) -> Any:
    if kind == "path":
        if not isinstance(value, (str, PathLike)):
            raise TypeError(value)
        return Path(value)
    if kind == "bool":
        return _parse_bool(value)
    if kind == "int":
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError(value)
        return int(value)
    if kind == "float":
        if isinstance(value, bool):
            raise ValueError(value)
        converted = float(value)
        if not math.isfinite(converted):
            raise ValueError(value)
        return converted
    if isinstance(value, PathLike):
        return str(Path(value))
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise TypeError(value)
    return str(value)


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "false", "no", "0"):
        return value.strip().lower() in ("true", "yes", "1")
    raise ValueError(value)


def check_values(options: Iterable[Option], values: Mapping[str, Any], *, owner: str,
                 error: type[EmbError] = OptionError) -> None:
    """Refuse (``error``) a value of ``values`` that its declared option does not allow.

    ``options`` declare them; ``values`` maps keyword → value as a function got it (undeclared
    keywords are not checked; ``None`` is "not given").
    """
    declared = {o.name: o for o in options}
    for name, value in values.items():
        if name in declared and value is not None:
            declared[name].check(value, owner=owner, error=error)


# -- shared declarations ---------------------------------------------------------------------------
#: The seed every random analysis takes (the CLI's shared ``--seed``).
SEED = Option(name="seed", type="int", high=MAX_SEED, help="Seed of every random choice")
#: The seed of an analysis that hands it to scikit-learn (``random_state`` < 2**32).
SEED_32 = SEED.but(high=2**32 - 1)
#: The alternative hypothesis of a test.
ALTERNATIVE = Option(name="alternative", choices=("greater", "less", "two-sided"),
                     help="alternative hypothesis")
#: The multiple-comparison correction.
CORRECTION = Option(name="correction", choices=("none", "holm", "bh"),
                    help="multiple-comparison correction")
#: Delta degrees of freedom of a standard deviation.
DDOF = Option(name="ddof", type="int", help="delta degrees of freedom of d's standard deviation")
#: Monte-Carlo splits of a permutation test.
N_PERMUTATIONS = Option(name="n_permutations", type="int", low=2, high=MAX_PERMUTATIONS,
                        help="Monte-Carlo splits when exact enumeration is too big")
#: The method: the correct one, or the authors' published code (the CLI's ``--reference``).
METHOD = Option(name="method", choices=("default", "reference"),
                help="the correct method, or the authors' published code")
#: LinearSVC's regularisation.
C_SVC = Option(name="C", type="float", flag="--C", low=0, low_open=True,
               help="LinearSVC regularisation")
#: Folds of a classifier's cross-validated accuracy.
CV_FOLDS = Option(name="cv_folds", type="int", high=25,
                  help="folds of the classifier's cross-validated accuracy")
#: The file formats of an analysis' tables (``emb analyze --format``, repeatable; the Python API's
#: ``table_format``, a name or a list): ``auto`` is CSV, and Parquet for the per-word tables (a
#: Warriner run has millions of rows); ``latex`` is a booktabs ``tabular`` through pandas.
TABLE_FORMAT = Option(name="table_format", multiple=True, flag="--format", metavar="FORMAT",
                      choices=("auto", "csv", "latex", "parquet"), default=("auto",),
                      help="table file format; repeat for several (auto: CSV, and Parquet for "
                           "the per-word tables; latex: a booktabs tabular, for a paper)")
#: Fewest words per word set before a result row is flagged ``small_n``. Caliskan et al. (2017)
#: ran WEAT on sets of 8 to 32 words (WEAT6-10: 8 per set), and the per-stimulus bootstrap and
#: the permutation test of fewer have few distinct resamples; below 8 a d or CES is reported but
#: flagged, and the summary names the tests. Sets with no word at all drop their test. At most
#: 10^6: beyond it every set of every vocabulary would be flagged.
MIN_WORDS = Option(name="min_words", type="int", low=1, high=1_000_000,
                   help="fewest words per set before a row is flagged small_n (8: the smallest "
                        "sets of Caliskan et al. 2017, WEAT6-10)")
#: Which words cells compared side by side (settings, and stores of one run) are computed on:
#: ``common`` (the default): the words, and polar words, present in every cell, so that a
#: difference between two cells is not a difference between their word lists; ``per-setting``:
#: each cell on all of its own words (emb before issue 24). See docs/rules/same-words.md.
WORD_SET = Option(name="word_set", choices=("common", "per-setting"),
                  help="words compared across settings (and stores): 'common', those present in "
                       "all of them; 'per-setting', each on all of its own")
#: Standardise each layer before any cosine (every analysis): ``center`` subtracts the layer's mean
#: vector over the suite's items (the common direction that makes any two words look similar,
#: Ethayarajh 2019), ``zscore`` also scales every dimension to unit variance (the rogue dimensions
#: of Timkey & van Schijndel 2021).
STANDARDIZE = Option(name="standardize", choices=("none", "center", "zscore"), default="none",
                     help="standardise each layer before any cosine: subtract its mean vector "
                          "(center), and scale every dimension to unit variance (zscore)")


# -- the run's own options of every analysis (emb analyze's flags, emb.analyze's keywords) -------
#: The stores an analysis reads, each ``[LABEL=]PATH`` (repeatable).
STORES = Option(name="stores", multiple=True, flag="--store", metavar="[LABEL=]PATH", required=True,
                help="Store path or URL (a .zip, s3://, https://…); repeat for several models; "
                     "LABEL=PATH names the model in tables and figures (a path that exists is "
                     "taken whole, even with an '=' in it).")
#: The store group read: one for every store, or ``LABEL=GROUP`` for one store (repeatable).
SUITE = Option(name="suite", multiple=True, metavar="[LABEL=]GROUP",
               help="The store group to read; LABEL=GROUP for the store labelled LABEL (--store "
                    "LABEL=PATH) alone, so that differently named suites of two models compare "
                    "in one run; repeatable")
#: Where an analysis' files are written (None: the default directory).
OUT = Option(name="out", metavar="DIRECTORY", help="Output directory")
#: Replace an earlier run's files there.
OVERWRITE = Option(name="overwrite", type="bool", default=False,
                   help="Replace an earlier run's files in the output directory, the default "
                        "one or --out (refused otherwise).")
#: The figures' file formats.
FIGURE_FORMATS = Option(name="figure_formats", multiple=True, flag="--figure-format",
                        choices=("png", "pdf", "svg"), default=("png",),
                        help="Figure file format; repeat for several")
#: Figures along the relative depth of the layers.
RELATIVE_DEPTH = Option(name="relative_depth", type="bool", default=False,
                        help="Figures: x = layer / last layer (compares models of different "
                             "depth).")
#: No figures (``figures=False`` in Python).
NO_PLOTS = Option(name="no_plots", type="bool", default=False, help="Do not draw figures.")
#: The authors' published code (``method="reference"`` in Python, :data:`METHOD`).
REFERENCE = Option(name="reference", type="bool", default=False,
                   help="Reproduce the authors' published code instead of the correct method "
                        "(see METHODS.md).")

# -- the extraction's options that the backends' runners take too -----------------------------------
#: ``auto``, ``cpu``, ``mps``, ``cuda``, or ``cuda:K`` (GPU K), any case (ASCII digits: not "１").
_DEVICE = re.compile(r"(auto|cpu|mps|cuda)(?::([0-9]+))?", re.ASCII)


def _device(value: Any) -> str:
    """A device spec, normalised (``"CUDA:1"`` -> ``"cuda:1"``); whether CUDA is there and GPU K
    exists is checked when the model loads (:func:`emb.backends.load_model`)."""
    if not isinstance(value, str):
        raise TypeError(value)
    text = value.strip().lower()
    match = _DEVICE.fullmatch(text)
    if match is None or (match.group(2) is not None and match.group(1) in ("auto", "cpu")):
        raise ValueError(value)
    return text


#: The model's compute dtype (``emb extract --dtype``; :func:`emb.backends.load`).
DTYPE = Option(name="dtype", choices=("float32", "float16", "bfloat16", "auto"), default="float32",
               help="Model compute dtype (auto: bfloat16 on a GPU that supports it, else float16 "
                    "on a GPU, else float32).")
#: The device a model runs on (``emb extract --device``; :func:`emb.backends.load`). One process
#: per GPU: ``--device cuda:K`` (or ``CUDA_VISIBLE_DEVICES=K`` with ``--device cuda``) with
#: ``--shard K+1/N`` runs N GPUs of one node on one store.
DEVICE = Option(name="device", default="auto", parser=_device,
                expects="auto, cpu, mps, cuda, or cuda:K for GPU K (0-based; 'nvidia-smi -L' "
                        "lists them)",
                help="auto, cpu, cuda, or cuda:K for GPU K (0-based).")
#: Contexts per forward pass (``emb extract --batch-size``; :meth:`emb.backends.Runner.embed`).
#: No upper bound: a batch larger than a window's contexts is that window.
BATCH_SIZE = Option(name="batch_size", type="int", low=1, high=math.inf, default=64,
                    help="Items per forward batch.")
