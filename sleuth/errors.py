"""Errors that reach users as one clear line (CLI: non-zero exit; service: HTTP 4xx)."""

from __future__ import annotations


class SleuthError(Exception):
    """Base class of every error caused by input, configuration or a missing resource.

    ``str(error)`` is the single line shown to the user; no traceback is printed for it.
    """


class InputError(SleuthError):
    """Malformed input data, located by file and (when known) line and field."""

    def __init__(self, message: str, *, path: object = None, line: int | None = None, field: str | None = None):
        self.path, self.line, self.field = path, line, field
        where = ""
        if path is not None:
            where = f"{path}:{line}" if line is not None else f"{path}"
        if field is not None:
            message = f"field '{field}': {message}"
        super().__init__(f"{where}: {message}" if where else message)


class ConfigError(SleuthError):
    """A bad pipeline or stage configuration (unknown key or stage, wrong type)."""


class IndexError_(SleuthError):
    """A missing, corrupt or incompatible index directory."""


class StorageError(SleuthError):
    """A write that failed (disk full, quota, permissions, a parent that is a file); the message names the file."""


class ShardUnavailableError(SleuthError):
    """A shard of a sharded index that stays down (its actor's restarts spent, or no answer in time); the message
    names the shard. The service answers it with HTTP 503: a ranking is never returned without a shard."""


class QueryError(SleuthError):
    """A query that cannot be answered (empty, too long)."""


class MissingExtraError(SleuthError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, package: str, extra: str, purpose: str = ""):
        what = f" for {purpose}" if purpose else ""
        super().__init__(f"{package} is needed{what}: pip install 'sleuth[{extra}]'")
