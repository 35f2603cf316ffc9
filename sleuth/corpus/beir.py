"""BEIR datasets: corpus.jsonl, queries.jsonl and qrels/<split>.tsv (TREC qrels are accepted too)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sleuth.corpus.jsonl import iter_jsonl, read_jsonl_documents, require_id, require_new_id, require_query_text
from sleuth.corpus.model import Document, Qrels, Query
from sleuth.corpus.qrels import read_qrels
from sleuth.errors import InputError

__all__ = ["BeirDataset", "load_beir", "read_beir_corpus", "read_beir_queries", "read_qrels"]

COMPRESSION_SUFFIXES = ("", ".gz", ".bz2")


def read_beir_corpus(path: str | Path) -> Iterator[Document]:
    """Stream Documents from a BEIR corpus.jsonl (``_id``, ``title``, ``text``, ``metadata``); a folder means its
    corpus.jsonl. The ``metadata`` object is merged into ``Document.metadata``."""
    path = Path(path)
    return read_jsonl_documents(find_file(path, "corpus.jsonl") if path.is_dir() else path)


def read_beir_queries(path: str | Path) -> Iterator[Query]:
    """Stream Queries from a BEIR queries.jsonl (``_id``, ``text``, optional ``metadata`` and other keys); an id
    that comes twice is an InputError naming both lines."""
    first_lines: dict[str, int] = {}
    for number, obj in iter_jsonl(path):
        query_id = require_new_id(first_lines, require_id(obj, "_id", path, number), path, number)
        text = require_query_text(obj, "text", path, number)
        given = obj.get("metadata")
        metadata: dict[str, Any] = given if isinstance(given, dict) else {}
        extra = {k: v for k, v in obj.items() if k not in ("_id", "text", "metadata")}
        yield Query(id=query_id, text=text, metadata={**metadata, **extra})


@dataclass
class BeirDataset:
    """One split of a BEIR dataset: the corpus file (read lazily), the split's queries and its qrels."""

    corpus_path: Path
    queries: list[Query] = field(default_factory=list)
    qrels: Qrels = field(default_factory=dict)

    def documents(self) -> Iterator[Document]:
        """Stream the corpus; each call starts a new pass over the file."""
        return read_beir_corpus(self.corpus_path)


def load_beir(directory: str | Path, split: str = "train") -> BeirDataset:
    """Load a BEIR folder: qrels/<split>.tsv, the queries judged in it (file order), and the corpus path.

    Qrels naming a query that is missing from queries.jsonl raise InputError.
    """
    directory = Path(directory)
    if not directory.exists():  # before: "not a BEIR folder" for a path that is not there at all
        raise InputError("not found (a BEIR folder: corpus.jsonl, queries.jsonl, qrels/)", path=directory)
    if not directory.is_dir():
        raise InputError("not a BEIR folder (expected corpus.jsonl, queries.jsonl, qrels/)", path=directory)
    qrels_path = find_split(directory, split)
    qrels = read_qrels(qrels_path)
    queries = [q for q in read_beir_queries(find_file(directory, "queries.jsonl")) if q.id in qrels]
    missing = set(qrels) - {q.id for q in queries}
    if missing:
        raise InputError(f"{len(missing)} judged query id(s) not in queries.jsonl, e.g. {sorted(missing)[:3]}",
                         path=qrels_path)
    return BeirDataset(corpus_path=find_file(directory, "corpus.jsonl"), queries=queries, qrels=qrels)


def find_split(directory: Path, split: str) -> Path:
    """``qrels/<split>.tsv`` of a BEIR folder; InputError listing the splits present (and suggesting ``test``,
    the split most BEIR datasets ship alone) when it is missing."""
    try:
        return find_file(directory / "qrels", f"{split}.tsv")
    except InputError:
        present = sorted({p.name.split(".")[0] for p in (directory / "qrels").glob("*.tsv*")})
        if not present:
            raise InputError("no qrels/<split>.tsv file (expected a BEIR folder)", path=directory / "qrels") from None
        hint = "test" if "test" in present else present[0]
        raise InputError(f"no '{split}' split; the splits present are {', '.join(present)}: pass --split {hint} "
                         f"(in Python: split='{hint}')", path=directory / "qrels" / f"{split}.tsv") from None


def find_file(directory: Path, name: str) -> Path:
    """``directory/name``, or its .gz/.bz2 variant; InputError naming the expected path when none exists, and
    the variants when there are several (before: the first was read and the others ignored without a word)."""
    found = [directory / f"{name}{suffix}" for suffix in COMPRESSION_SUFFIXES
             if (directory / f"{name}{suffix}").is_file()]
    if len(found) > 1:
        raise InputError(f"{' and '.join(path.name for path in found)} are both here: keep one", path=directory)
    if not found:
        raise InputError("file not found", path=directory / name)
    return found[0]
