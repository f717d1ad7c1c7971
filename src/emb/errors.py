"""Every exception emb raises.

Each inherits from :class:`EmbError` and from the builtin it resembles, so callers can catch
either.  Messages say what is wrong, what was found, and what to do.
"""

from __future__ import annotations

__all__ = [
    "EmbError",
    "SuiteError",
    "LexiconError",
    "CorpusError",
    "ModelError",
    "TargetNotFoundError",
    "StoreError",
    "RemoteStoreError",
    "StoreMismatchError",
    "StoreLockedError",
    "CorruptStoreError",
    "IncompleteStoreError",
    "MissingStimuliError",
    "AnalysisError",
    "SchedulerError",
    "SettingError",
    "OptionError",
    "EmbWarning",
]


class EmbError(Exception):
    """Base class of all emb errors."""


class SuiteError(EmbError, ValueError):
    """A stimulus suite is malformed (schema violation, bad placeholder, unknown generator)."""


class LexiconError(EmbError, ValueError):
    """A lexicon file is empty, has duplicate words, or non-numeric ratings."""


class CorpusError(EmbError, ValueError):
    """A corpus cannot be read or has no usable sentences."""


class ModelError(EmbError, ValueError):
    """A model cannot be loaded (unknown id or path, unsupported architecture)."""


class TargetNotFoundError(EmbError, ValueError):
    """A target word cannot be located among its context's subtokens."""


class StoreError(EmbError, ValueError):
    """A store cannot be opened, read or written."""


class RemoteStoreError(StoreError):
    """A store at a URL cannot be reached, stopped answering, or refused a request (the server,
    the endpoint, the credentials or the network: not the store's data).  What was written before
    stays: re-running the same command once the server answers resumes."""


class StoreMismatchError(StoreError):
    """Writing into a store made from another model, revision or suite definition."""


class StoreLockedError(StoreError):
    """Another process is writing the same suite (or the store's root) right now."""


class CorruptStoreError(StoreError):
    """A store's metadata or data is damaged in a way no interrupted run can explain."""


class IncompleteStoreError(StoreError):
    """A store (or one suite in it) was not finished; re-run the same 'emb extract' to complete it."""


class MissingStimuliError(EmbError, KeyError):
    """An analysis needs words that the store does not hold."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class AnalysisError(EmbError, ValueError):
    """An analysis got options or data it cannot use."""


class SchedulerError(EmbError, ConnectionError):
    """A dask scheduler (``--scheduler``) cannot be reached, does not answer in time, or is not a
    dask scheduler."""


class SettingError(EmbError, ValueError):
    """An emb setting read from the environment (``EMB_CONNECT_TIMEOUT``, ``EMB_READ_TIMEOUT``,
    ``EMB_RETRIES``) holds a value emb cannot use."""


class OptionError(EmbError, ValueError):
    """An option given that the request does not take (a suite's option without its suite, a
    backend's option for a model another backend opens), or given more often than it can be;
    ``option`` names the flag to blame (``"--suite"``), when one is (the CLI's usage error)."""

    def __init__(self, message: str, *, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


class EmbWarning(UserWarning):
    """Something the user should know, that does not stop the work (targets at position 0 of a
    causal model, targets made of nothing but the unknown token, a dead writer's lock taken
    over); the CLI prints it as one line."""
