"""The interface between the pipeline and the models (torch-free): the :class:`Runner` protocol,
its records :class:`ModelInfo` and :class:`Encoding`, and the :class:`Backend` entry that opens
one kind of model.

A backend (:mod:`emb.backends.hf`, :mod:`emb.backends.static`, or a third party's, through the
``emb.backends`` entry-point group) says whether it opens a model spec (:meth:`Backend.guess_can_open`,
as xarray's ``BackendEntrypoint`` does), declares its options (``emb extract`` has a flag for
each) and loads a :class:`Runner`. The pipeline holds a Runner and never asks which kind it is:
what differs between kinds (a static file's fixed pooling, its words without a vector) is the
runner's own :meth:`Runner.prepare`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from emb.errors import ModelError
from emb.files.documents import show
from emb.options import BATCH_SIZE
from emb.schemas.datamodel import POOLINGS

if TYPE_CHECKING:  # pragma: no cover
    from emb.options import Option
    from emb.stimuli.suites import Suite

__all__ = ["Backend", "Encoding", "ModelInfo", "Runner"]


#: ModelInfo fields written only when set (see :meth:`ModelInfo.to_dict`).
_OPTIONAL = ("quantization", "device_map", "loaded_blocks", "memory", "tokenizer_fingerprint")


@dataclass(frozen=True, kw_only=True)
class ModelInfo:
    """Provenance of a loaded model, written to the store's ``model`` attribute.

    Attributes
    ----------
    model_id : str
        The model as given to :func:`emb.backends.load_model` (hub id, directory or .gguf path).
    source : {"hub", "local", "gguf"}
    revision : str or None
        The hub commit hash when known, else None (local directories and gguf files).
    fingerprint : str
        sha256 (hex) over the bytes of the weight files, in the order of their sorted relative
        paths (for a single file: its ``sha256sum``); for hub models, the commit hash (or the
        requested revision when it could not be resolved).
    architecture : str
        ``config.architectures[0]``, else the model's class name.
    model_type : str
        ``config.model_type``.
    n_layers : int
        Number of blocks L of the (encoder) stack; the model returns L + 1 hidden states.
    hidden_size : int
        Feature size of the hidden states.
    is_encoder_decoder : bool
        True when only the encoder of an encoder–decoder model is run.
    tokenizer : str
        ``"<TokenizerClass> (<name_or_path>)"``.
    padding_side : str
        The tokenizer's padding side (the runner itself always pads on the right).
    bos_token, bos_token_id : str or None, int or None
        The tokenizer's BOS token.
    adds_bos : bool
        Whether the tokenizer puts the BOS token first by itself (``add_special_tokens=True``).
    last_layer : str
        What hidden state L is, e.g. "after the final layer norm (ln_f)" or "output of the last
        block".
    causal : bool
        Whether a token's hidden states depend on earlier tokens only, found by running the
        model on a sentence and on its first half (when loading, :func:`emb.backends.load_model`).
        A causal model's contexts are cut after the target's last subtoken: the tokens after it
        cannot change its vectors.
    dtype, device : str
        Weights' dtype and the device the model runs on.
    transformers_version, torch_version : str
    unk_token_id : int or None
        The tokenizer's unknown token (targets made of nothing else are reported).
    trust_remote_code : bool
        Whether the model was allowed to run Python code of its own (``--trust-remote-code``).
    weights_format : str
        ``"safetensors"``, ``"pickle (torch.load weights_only=True)"``, ``"gguf"``, or
        ``"hub"`` (the format transformers chose: safetensors when the repository has them).
    quantization : str or None
        ``"8bit"`` or ``"4bit"`` (bitsandbytes, ``--quantize``); part of the model's identity.
    device_map : str or None
        The ``--device-map`` the weights were placed with; part of the model's identity.
    loaded_blocks : int or None
        With a device map or quantisation and a layer subset: the blocks loaded (the first
        ones; those after the highest stored layer are neither loaded nor run).
    memory : dict or None
        The memory plan the weights were placed by (:class:`emb.backends._memory.MemoryPlan`).
    tokenizer_fingerprint : str or None
        A local directory's: sha256 (hex) over the names and sha256 of its tokenizer files
        (``tokenizer.json``, ``vocab.txt``, ``tokenizer_config.json`` …); part of the model's
        identity where the store records one (a tokenizer edited in place changes every vector
        without changing a weight).  None for hub models (the commit covers it) and gguf files
        (the file holds its tokenizer).

    The five fields above are written only when set: the model attribute of a run without
    them is what it was before they existed.
    """

    model_id: str
    source: Literal["hub", "local", "gguf"]
    revision: str | None
    fingerprint: str
    architecture: str
    model_type: str
    n_layers: int
    hidden_size: int
    is_encoder_decoder: bool
    tokenizer: str
    padding_side: str
    bos_token: str | None
    bos_token_id: int | None
    adds_bos: bool
    last_layer: str
    dtype: str
    device: str
    transformers_version: str
    torch_version: str
    causal: bool = False
    unk_token_id: int | None = None
    trust_remote_code: bool = False
    weights_format: str = ""
    quantization: str | None = None
    device_map: str | None = None
    loaded_blocks: int | None = None
    memory: dict[str, Any] | None = None
    tokenizer_fingerprint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (those of :data:`_OPTIONAL` only when set)."""
        out = asdict(self)
        for key in _OPTIONAL:
            if out.get(key) is None:
                out.pop(key, None)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelInfo:
        """Rebuild from :meth:`to_dict`'s output; unknown keys are ignored."""
        names = {field.name for field in fields(cls)}
        required = {field.name for field in fields(cls) if field.default is MISSING}
        missing = sorted(required - set(data))
        if missing:
            raise ModelError(f"model info lacks the keys {missing}; got keys {sorted(data)}")
        return cls(**{key: data[key] for key in names if key in data})


@dataclass(frozen=True, kw_only=True, eq=False)
class Encoding:
    """One tokenized context with its target's token positions.

    Attributes
    ----------
    input_ids : numpy.ndarray of int32, (n_tokens,)
        The token ids fed to the model (after the BOS policy).
    target : numpy.ndarray of int64, (n_subtokens,)
        Increasing indices into ``input_ids`` of the target word's subtokens.
    window : (int, int) or None
        When the context was longer than the model's positions: the character range of the context
        that was tokenized instead (cut around the target); None when the whole context fits.
    """

    input_ids: np.ndarray
    target: np.ndarray
    window: tuple[int, int] | None = None

    @property
    def n_tokens(self) -> int:
        """Length of the whole tokenized context."""
        return int(self.input_ids.shape[0])

    @property
    def n_subtokens(self) -> int:
        """Number of subtokens of the target."""
        return int(self.target.shape[0])

    @property
    def subtoken_ids(self) -> np.ndarray:
        """Token ids of the target's subtokens, int32 (n_subtokens,)."""
        return self.input_ids[self.target]

    @property
    def token_start(self) -> int:
        """Index of the target's first subtoken."""
        return int(self.target[0])

    @property
    def token_end(self) -> int:
        """One past the index of the target's last subtoken."""
        return int(self.target[-1]) + 1



class Runner(Protocol):
    """What the pipeline asks of a loaded model: its provenance, tokenised targets, and every
    layer's pooled vector of each target.

    A runner subclasses this protocol (and inherits the defaults of :attr:`poolings`,
    :meth:`token_id`, :meth:`prepare` and :meth:`notes`) or provides the same members itself.

    Attributes
    ----------
    info
        Provenance written to the store's ``model`` attribute: :class:`ModelInfo`, or a record
        of the backend's own with ``to_dict()`` and the keys the store reads (``model_id``,
        ``fingerprint``, ``n_layers``, ``hidden_size``, ``causal``, ``bos_token_id``, ``device``).
    poolings
        The poolings the runner computes; a run stores the subset it asks for
        (default: :data:`emb.schemas.datamodel.POOLINGS`).
    """

    info: Any
    poolings: tuple[str, ...] = POOLINGS

    def encode(
        self,
        contexts: Sequence[str],
        spans: Sequence[tuple[int, int]],
        *,
        bos: bool | None = None,
        bos_token_id: int | None = None,
    ) -> Sequence[Any]:
        """Each context tokenised, with its target's subtokens (an :class:`Encoding` each)."""
        ...

    def embed(
        self,
        encodings: Sequence[Any],
        *,
        poolings: Sequence[str] = POOLINGS,
        batch_size: int = BATCH_SIZE.default,
        progress: Callable[[int], object] | None = None,
        out_dtype: Literal["float32", "float16"] = "float32",
        truncate: bool | None = None,
    ) -> np.ndarray:
        """Every layer's pooled vector of each encoded target: (item, layer, pooling, feature).

        A runner that can stop its forward pass early also takes ``layers`` (a sequence of
        layer indices); the pipeline passes it only for a subset of the layers.
        """
        ...

    def token_id(self, token: str) -> int:
        """The vocabulary id of one token (``--bos-token``); a runner without tokens refuses."""
        raise ModelError(
            f"--bos-token {show(token)} was given for {getattr(self.info, 'model_id', 'a model')}, "
            "which has no vocabulary of tokens; drop --bos-token"
        )

    def prepare(
        self,
        suites: Sequence[Suite],
        *,
        poolings: Sequence[str],
        storage_dtype: str,
        bos_token: str | None,
    ) -> tuple[list[Suite], tuple[str, ...]]:
        """The suites as this runner extracts them and the poolings it stores, checked before the
        store is touched (default: the suites and the poolings as given).

        Parameters
        ----------
        suites
            The run's suites.
        poolings
            The poolings the run asks for (already checked names).
        storage_dtype
            The stored vectors' dtype.
        bos_token
            The run's ``--bos-token``, or None.

        Raises
        ------
        EmbError
            What this runner cannot extract (static vectors: words without a vector, a
            ``bos_token``, vectors the storage dtype cannot hold).
        """
        return list(suites), tuple(poolings)

    def notes(self, suites: Sequence[Suite]) -> list[str]:
        """Lines to show the user about the suites :meth:`prepare` returned (static vectors:
        how many words have a vector); none by default."""
        return []


class Backend:
    """One kind of model emb opens: a module with a subclass of this, one line in
    :data:`emb.backends.BACKENDS` (or an ``emb.backends`` entry point of a distribution).

    Subclasses set the class attributes and implement :meth:`guess_can_open` and :meth:`load`;
    loading imports heavy packages (torch) inside :meth:`load`, never at module level.

    Attributes
    ----------
    name
        The backend's name (``"hf"``, ``"static"``).
    description
        One line for listings.
    label
        What the backend's flags apply to, put before their help (``"static vectors"``); empty:
        no prefix.
    takes_layers
        Whether :meth:`load` takes ``layers`` (the run's ``--layers``), to load only the blocks
        the stored layers need.
    options
        The options :meth:`load` takes beside the model (``emb extract`` has a flag for each):
        :class:`~emb.options.Option` records, the default in each.
    catch_all
        Whether the backend opens any spec the others do not (asked last: hub ids are any
        text).
    """

    name: str = ""
    description: str = ""
    label: str = ""
    options: tuple[Option, ...] = ()
    catch_all: bool = False
    takes_layers: bool = False

    def guess_can_open(self, model: str, **options: Any) -> bool:
        """Whether this backend opens ``model`` (a path or an id), given the options given."""
        return False

    def load(
        self, model: str, *, suites: Sequence[Suite], dtype: str, device: str, **options: Any
    ) -> Runner:
        """Load ``model`` for the ``suites`` (their words, for a backend that reads only those),
        with the run's compute ``dtype`` and ``device`` and this backend's own ``options``."""
        raise NotImplementedError

    def refuse_unused(self, options: Mapping[str, Any], suites: Sequence[Suite]) -> None:
        """Refuse this backend's options given for a model another backend opens, where that
        is a mistake (default: they are ignored).

        Raises
        ------
        OptionError
            Options that cannot apply.
        """

    def quiet(self) -> None:
        """Silence the progress output of the packages the backend loads with (the CLI shows
        its own); nothing by default."""

    def __repr__(self) -> str:
        return f"<emb backend {self.name!r}: {', '.join(o.name for o in self.options)}>"


def words_of(suites: Iterable[Suite]) -> Iterable[str]:
    """Every item's word of the suites, in order (repeats included)."""
    return (item.word for suite in suites for item in suite.items)
