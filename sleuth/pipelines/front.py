"""The short path from a string to results: ``sleuth.open(path)`` gives a Workspace over a corpus, and
``read_queries`` / ``read_qrels`` take a file or a BEIR folder."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from sleuth.corpus.model import Qrels, Query
from sleuth.errors import ConfigError
from sleuth.pipelines.sources import corpus_source
from sleuth.pipelines.workspace import Workspace


def open(corpus: str | Path | Any = None, *, format: str | None = None, fields: Mapping[str, str] | None = None,
         splitter: str = "none", window_words: int = 100, home: str | Path | None = None, device: str = "cpu",
         progress: bool = True) -> Workspace:
    """A Workspace over ``corpus``: a file or folder in any format ``sleuth.corpus`` reads (detected unless
    ``format`` is given), documents in memory (a pandas DataFrame or a list of dicts with an id, ``docno`` included,
    and a text: written once under ``home/corpora/``, :mod:`sleuth.corpus.in_memory`), or None: the bundled
    SciFact. ``fields`` maps id/title/text to a JSONL file's (or the records') keys; ``splitter`` is none, sections
    or window. A path that is not a corpus, an unknown format or a misplaced field mapping fails here, not at first
    use. Indexes are built on first use and cached under ``home`` (default ``$SLEUTH_HOME``)."""
    from sleuth.corpus.in_memory import corpus_file, is_in_memory
    from sleuth.paths import home_dir

    folder = Path(home) if home is not None else home_dir()
    if corpus is not None and not isinstance(corpus, (str, Path)):
        if not is_in_memory(corpus) or format not in (None, "jsonl"):
            given = f"format '{format}' for documents in memory" if is_in_memory(corpus) else \
                type(corpus).__name__
            raise ConfigError(f"sleuth.open takes a corpus path, a pandas DataFrame or a list of dicts; got {given}")
        corpus, fields = corpus_file(corpus, folder / "corpora", fields)  # before: a TypeError
        format = "jsonl"
    source = corpus_source(None if corpus is None else Path(corpus), format, fields, splitter, window_words)
    workspace = Workspace(source, device=device, show_progress=progress)
    if home is not None:
        workspace.home = Path(home)
    return workspace


def read_queries(path: str | Path, split: str = "train") -> list[Query]:
    """Queries from a BEIR folder (those judged in ``qrels/<split>.tsv``), a BEIR queries.jsonl, a question file
    (``{"id", "question", "answers"}`` lines; answers in ``metadata["answers"]``), a dataset's own question file
    (SQuAD: every question, the unanswerable ones too; HotpotQA or 2WikiMultihopQA; MuSiQue), TREC topics (TSV or
    SGML) or a SMART query file."""
    path = Path(path)
    if path.is_dir():
        from sleuth.corpus.beir import load_beir

        return load_beir(path, split).queries
    dataset_reader = dataset_question_reader(path)
    if dataset_reader is not None:
        return list(dataset_reader(path))
    if ".jsonl" in path.name and '"question"' in first_line(path):
        from sleuth.corpus.questions import read_questions

        return list(read_questions(path))
    from sleuth.corpus.formats import read_queries as read_query_file

    return read_query_file(path)


def dataset_question_reader(path: Path) -> Callable[[Path], Iterable[Query]] | None:
    """The reader of a SQuAD, HotpotQA-format (HotpotQA, 2WikiMultihopQA) or MuSiQue question file (told by a SQuAD
    file's shape or by the keys of the first record: :func:`sleuth.corpus.formats.question_file_format`), None for
    any other file."""
    from sleuth.corpus.questions import is_squad_file

    if is_squad_file(path):
        from sleuth.corpus.squad import read_squad_questions

        return read_squad_questions
    from sleuth.corpus.formats import QUESTION_READERS, question_file_format

    kind = question_file_format(path)
    return None if kind is None else QUESTION_READERS[kind]


def read_qrels(path: str | Path, split: str = "train") -> Qrels:
    """Relevance judgements from a qrels file (BEIR TSV or TREC) or a BEIR folder's ``qrels/<split>.tsv``."""
    from sleuth.corpus.beir import find_split
    from sleuth.corpus.qrels import read_qrels as read_qrels_file

    path = Path(path)
    return read_qrels_file(find_split(path, split) if path.is_dir() else path)


def first_line(path: Path) -> str:
    """The first non-blank line of a (possibly compressed) text file ('' when there is none)."""
    from sleuth.io import open_text

    with open_text(path) as handle:
        return next((line for line in handle if line.strip()), "")

