"""Document updates through the service: add documents to, or delete ids from, a served index folder; a new
generation is written, then the pipelines that read that folder are reloaded and swapped in (searches see before or
after; the others keep serving as they are)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sleuth.errors import SleuthError
from sleuth.service.limits import Limits, RequestError, safe_name
from sleuth.service.served import ServedPipelines


class DocumentUpdates:
    """Updates of the index folders ``index_dirs`` (served name -> bm25 or dense index folder), one at a time."""

    def __init__(self, index_dirs: Mapping[str, str | Path] | None, served: ServedPipelines, limits: Limits):
        self.index_dirs = {name: Path(path) for name, path in (index_dirs or {}).items()}
        self.served, self.limits = served, limits
        self._lock = threading.Lock()

    def folder_of(self, index: Any) -> Path:
        """The folder of the index folder served as ``index`` (a 409 where none is served, a 400 for an unknown
        name)."""
        if not self.index_dirs:
            raise RequestError("this service serves no updatable index folders", 409)
        index = safe_name(index, "index")
        if index not in self.index_dirs:
            raise RequestError(f"unknown index '{index}' (updatable: {', '.join(self.index_dirs)})")
        return self.index_dirs[index]

    def update(self, index: Any, documents: Any = None, ids: Any = None) -> dict[str, Any]:
        """Add ``documents`` (``[{id, title?, text}]``) to, or delete ``ids`` from, the index served as ``index``
        (default: the only one): ``{"index", "added"|"deleted", "count", "reloaded"}`` (the pipelines reloaded: those
        that read its folder)."""
        from sleuth.index.as_built import CorpusReading, split_as_built
        from sleuth.index.updates import add_documents, delete_documents, passages_from_records

        if not self.index_dirs:
            raise RequestError("this service serves no updatable index folders", 409)
        if self.served.loader is None:
            raise RequestError("this service cannot reload its pipelines, so it cannot swap in updates", 409)
        if index is None:
            if len(self.index_dirs) > 1:
                raise RequestError(f"give 'index' (updatable: {', '.join(self.index_dirs)})")
            index = next(iter(self.index_dirs))
        folder = self.folder_of(index)
        index = safe_name(index, "index")
        limit = self.limits.max_batch * 16
        items = documents if documents is not None else ids
        if not isinstance(items, list) or not items:
            raise RequestError(f"'{'documents' if documents is not None else 'ids'}' must be a non-empty list")
        if len(items) > limit:  # a count, as the batch limit's: 400 (before: 413, the status of a body too large)
            raise RequestError(f"at most {limit} documents or ids per request (16 x --max-batch), got "
                               f"{len(items)}: send them in several requests")
        with self._lock:
            try:
                if documents is not None:
                    reading = CorpusReading.of(folder)  # the records read, and split, as the index's corpus was
                    passages = split_as_built(passages_from_records(documents, reading.fields), reading.splitter)
                    manifest = add_documents(folder, passages)
                else:
                    if not all(isinstance(item, str) and item for item in ids):
                        raise RequestError("'ids' must be a list of non-empty strings")
                    manifest = delete_documents(folder, ids)
            except SleuthError as exc:  # named by the index's served name: the server's folders are not the client's
                raise RequestError(without_folder(str(exc), folder, index), getattr(exc, "status", 400)) from None
            try:
                reloaded = self.served.reload(folder)["reloaded"]
            except SleuthError as exc:  # before: a 400 naming another index's folder, for a write that was committed
                message = str(exc)
                for name, other in self.index_dirs.items():
                    message = without_folder(message, other, name)
                raise RequestError(f"the {'addition' if documents is not None else 'deletion'} is committed to index "
                                   f"'{index}', but reloading the served indexes failed ({message}); it is served "
                                   "once POST /admin/reload succeeds", 500) from None
        if documents is not None:
            return {"index": index, "added": len(items), "count": manifest.count, "reloaded": reloaded}
        return {"index": index, "deleted": len(dict.fromkeys(ids)), "count": manifest.count,  # [a, a] deletes one
                "reloaded": reloaded}


def without_folder(message: str, folder: Path, name: str) -> str:
    """``message`` with the index ``folder`` (as given or in full) replaced by the index's served ``name`` (before:
    "already in the index /srv/data/indexes/x" told a client where the server keeps its files)."""
    for written in sorted({str(folder.resolve()), str(folder)}, key=len, reverse=True):
        message = message.replace(written, f"'{name}'")
    return message
