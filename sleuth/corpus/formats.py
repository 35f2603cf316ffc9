"""One entry point for every corpus format: ``read_documents(path, format=None)``, with format detection."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from sleuth.corpus.beir import COMPRESSION_SUFFIXES, read_beir_corpus
from sleuth.corpus.hotpotqa import read_hotpotqa_documents, read_hotpotqa_questions
from sleuth.corpus.jsonl import ID_KEYS, read_jsonl_documents
from sleuth.corpus.mediawiki import read_mediawiki
from sleuth.corpus.model import Document, Query
from sleuth.corpus.musique import read_musique_documents, read_musique_questions
from sleuth.corpus.ottqa import read_ottqa_tables
from sleuth.corpus.quest import read_quest_documents
from sleuth.corpus.smart import is_smart, read_smart_documents
from sleuth.corpus.squad import read_squad_documents
from sleuth.corpus.trec import read_trec_documents
from sleuth.corpus.tsv import read_tsv_documents, tsv_columns
from sleuth.errors import ConfigError, InputError
from sleuth.io import open_text

_READERS: dict[str, Callable[[Path], Iterator[Document]]] = {
    "beir": read_beir_corpus,  # a BEIR folder or its corpus.jsonl
    "jsonl": read_jsonl_documents,  # generic JSONL: id key _id, id, docid, doc_id or pid, or a field mapping
    "tsv": read_tsv_documents,  # id<TAB>text or id<TAB>title<TAB>text (MS MARCO collection.tsv, NFCorpus)
    "smart": read_smart_documents,  # SMART .I/.T/.A/.B/.W collections (Cranfield, CISI, MED, CACM, NPL)
    "trec": read_trec_documents,  # TREC SGML <DOC> files
    "mediawiki": read_mediawiki,  # MediaWiki XML export dumps
    "hotpotqa": read_hotpotqa_documents,  # title -> sentences JSON, or the contexts of a question file (2Wiki too)
    "musique": read_musique_documents,  # list of {title, text} JSON, or the paragraphs of a question file
    "quest": read_quest_documents,  # QUEST documents.jsonl
    "ottqa": read_ottqa_tables,  # an OTT-QA folder with tables/
    "squad": read_squad_documents,  # SQuAD v1.1/v2.0 JSON: one passage per paragraph
}
FORMATS: tuple[str, ...] = tuple(_READERS)
#: the question readers of the formats whose question files are corpora too (:func:`question_file_format`)
QUESTION_READERS: dict[str, Callable[[Path], Iterator[Query]]] = {
    "hotpotqa": read_hotpotqa_questions,  # HotpotQA, 2WikiMultihopQA
    "musique": read_musique_questions,
}


def read_documents(path: str | Path, format: str | None = None,
                   fields: Mapping[str, str] | None = None) -> Iterator[Document]:
    """Stream the Documents of a corpus in one of :data:`FORMATS`, detected by :func:`detect_format` when ``format``
    is None. ``fields`` maps id/title/text to the keys of a ``jsonl`` file.

    Format problems are reported at the call (ConfigError for an unknown name, InputError for an undetectable
    file); data errors while iterating.
    """
    path = Path(path)
    name = detect_format(path) if format is None else format
    if format is None and fields is not None and name == "quest":
        name = "jsonl"  # a field mapping says how to read the {title, text} lines
    if name not in _READERS:
        raise ConfigError(f"unknown corpus format '{name}'; known formats: {', '.join(FORMATS)}")
    if name == "jsonl":
        return read_jsonl_documents(path, fields)
    if fields is not None:
        raise ConfigError(f"a field mapping applies to the jsonl format only, not to '{name}'")
    return _READERS[name](path)


def detect_format(path: str | Path) -> str:
    """The format of a corpus path: a folder with corpus.jsonl -> beir, with tables/ -> ottqa; *.xml(.bz2/.gz) or
    a file starting with <mediawiki -> mediawiki; *.trec or a file starting with <DOC -> trec; a HotpotQA, 2Wiki or
    MuSiQue question file (*.json, *.jsonl) -> hotpotqa or musique (its paragraphs); *.jsonl(.gz/.bz2) ->
    quest when its first record is ``{"title", "text"}`` without an id (QUEST documents), else jsonl; a JSON object
    whose articles have "paragraphs" -> squad; a first line ``.I <id>`` -> smart; a first line of 2 or 3
    tab-separated columns -> tsv. Any other folder, or an empty one, raises InputError saying so; any other file
    names ``--format`` and the format names."""
    path = Path(path)
    if path.is_dir():
        if any((path / f"corpus.jsonl{suffix}").is_file() for suffix in COMPRESSION_SUFFIXES):
            return "beir"
        if (path / "tables").is_dir():
            return "ottqa"
        if not any(path.iterdir()):
            raise InputError("an empty folder: no corpus in it", path=path)
        raise InputError("a folder is read as a BEIR folder (corpus.jsonl) or an OTT-QA folder (tables/), and this "
                         "is neither: give the corpus file itself", path=path)
    elif not path.is_file():
        raise InputError("file not found", path=path)
    else:
        name = path.name.lower()
        if name.endswith(tuple(f".xml{suffix}" for suffix in COMPRESSION_SUFFIXES)):
            return "mediawiki"
        if name.endswith(".trec"):
            return "trec"
        if (question_format := question_file_format(path)) is not None:
            return question_format
        if name.endswith(tuple(f".jsonl{suffix}" for suffix in COMPRESSION_SUFFIXES)):
            return "quest" if _quest_documents(path) else "jsonl"
        head = _head(path)
        if head.startswith("<mediawiki") or (head.startswith("<?xml") and "<mediawiki" in head):
            return "mediawiki"
        if head[:4].lower() == "<doc":
            return "trec"
        if head.startswith("{") and '"paragraphs"' in head and '"data"' in head:
            return "squad"
        if is_smart(head):
            return "smart"
        if tsv_columns(head):
            return "tsv"
    raise InputError(f"cannot tell the corpus format; pass --format with one of: {', '.join(FORMATS)} (in Python: "
                     "format=...)", path=path)


def question_file_format(path: Path) -> str | None:
    """``hotpotqa`` for a HotpotQA-format question file (HotpotQA, 2WikiMultihopQA: records with ``_id``,
    ``question`` and ``context``), ``musique`` for a MuSiQue one (``id``, ``question``, ``paragraphs``), told by the
    first record of a ``.json`` or ``.jsonl`` file; None for anything else."""
    from sleuth.corpus.jsonfile import first_json_record

    if not path.name.lower().endswith((".json", ".jsonl")):
        return None
    try:
        if _head(path)[:1] not in ("[", "{"):
            return None
        record = first_json_record(path)
    except InputError:  # not UTF-8, not JSON, or not records: the reader reports it with its line
        return None
    if "question" not in record:
        return None
    if "_id" in record and "context" in record:
        return "hotpotqa"
    return "musique" if "id" in record and "paragraphs" in record else None


def _quest_documents(path: Path) -> bool:
    """Whether a JSONL file's first record is a QUEST document (``{"title", "text"}``, no ``_id``/``id``), as
    `sleuth quest corpus` writes them."""
    import json

    try:
        with open_text(path) as handle:
            line = next((line for line in handle if line.strip()), "")
        record = json.loads(line)
    except (OSError, EOFError, ValueError, InputError):
        return False
    return isinstance(record, dict) and {"title", "text"} <= set(record) and not set(ID_KEYS) & set(record)


def _head(path: Path, chars: int = 2048) -> str:
    """The first ``chars`` characters of a (possibly compressed) text file, left-stripped; '' if unreadable."""
    try:
        with open_text(path) as handle:
            return handle.read(chars).lstrip()
    except (OSError, EOFError, UnicodeDecodeError):
        return ""


def is_smart_query_file(path: Path) -> bool:
    """Whether ``path`` is a SMART query file (``.I`` records: cran.qry, CISI.QRY), as :func:`read_queries` tells."""
    return ".jsonl" not in path.name and is_smart(_head(path))


def read_queries(path: Path) -> list[Query]:
    """Queries from a BEIR queries.jsonl, a SMART query file (cran.qry, CISI.QRY) or TREC topics (TSV or SGML); a
    query id that comes twice is an InputError (a run keeps one ranking per id)."""
    if ".jsonl" in path.name:
        from sleuth.corpus.beir import read_beir_queries

        return list(read_beir_queries(path))  # which names both lines of a repeated id itself
    if is_smart_query_file(path):
        from sleuth.corpus.smart import read_smart_queries

        queries = list(read_smart_queries(path))
    else:
        from sleuth.corpus.trec import read_trec_topics

        queries = list(read_trec_topics(path))
    first: dict[str, int] = {}
    for number, query in enumerate(queries, start=1):
        if query.id in first:
            raise InputError(f"query id '{query.id}' appears twice (queries {first[query.id]:,} and {number:,})",
                             path=path)
        first[query.id] = number
    return queries
