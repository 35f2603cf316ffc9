"""Where a pipeline's corpus comes from: a path (or the bundled SciFact), its reader, field mapping and splitter."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.errors import ConfigError
from sleuth.pipelines.workspace import CorpusSource

SPLITTERS = ("none", "sections", "window")


def parse_fields(pairs: list[str] | None) -> dict[str, str] | None:
    """``["id=docid", "text=body"]`` -> ``{"id": "docid", "text": "body"}``."""
    if not pairs:
        return None
    fields: dict[str, str] = {}
    for pair in pairs:
        name, _, key = (part.strip() for part in pair.partition("="))
        if not name or not key:
            raise ConfigError(f"--field expects NAME=KEY (e.g. text=body), got '{pair}'")
        if name in fields:
            raise ConfigError(f"--field {name} given twice ('{fields[name]}', '{key}')")
        fields[name] = key
    return fields


def make_splitter(name: str, words: int = 100):
    """The passage splitter called ``name`` (none keeps one passage per document)."""
    if name == "none":
        return None
    from sleuth.corpus.splitters import SectionSplitter, WindowSplitter

    if name == "sections":
        return SectionSplitter().split
    if name == "window":
        return WindowSplitter(words=words).split
    raise ConfigError(f"unknown splitter '{name}' (known: {', '.join(SPLITTERS)})")


def refuse_corpus_options(fmt: str | None, fields: bool, splitter: str = "none") -> None:
    """A format, a field mapping or a splitter given without a corpus is a ConfigError (it would be ignored: the
    bundled SciFact is read as BEIR, whole)."""
    if fmt not in (None, "beir") or fields or splitter != "none":
        given = f"format '{fmt}'" if fmt not in (None, "beir") else "a field mapping" if fields else \
            f"--splitter {splitter}"
        raise ConfigError(f"{given} is for a corpus you give, and none was given (the bundled SciFact is read as "
                          "BEIR): name the corpus too")


def corpus_source(corpus: Path | None, fmt: str | None = None, fields: list[str] | Mapping[str, str] | None = None,
                  splitter: str = "none", window_words: int = 100) -> CorpusSource:
    """The corpus to work on: the given path, or the bundled SciFact when none is given; ``fields`` is the CLI's
    ``--field NAME=KEY`` list or a mapping. An unknown format, an undetectable one or a misplaced field mapping
    fails here (:meth:`CorpusSource.check`), not in the first pipeline stage that reads it."""
    if corpus is None:
        refuse_corpus_options(fmt, fields is not None, splitter)  # before: a --splitter split the bundled SciFact
        corpus, fmt = bundled_dataset_dir(), "beir"
    if not corpus.exists():
        raise ConfigError(f"corpus not found: {corpus}")
    corpus, fmt = beir_corpus_file(corpus, fmt, fields)
    name = splitter if splitter != "window" else f"window{window_words}"
    mapping = dict(fields) if isinstance(fields, Mapping) else parse_fields(fields)
    source = CorpusSource(corpus, fmt, mapping, make_splitter(splitter, window_words), name)
    source.check()
    return source


def beir_corpus_file(corpus: Path, fmt: str | None, fields: object = None) -> tuple[Path, str | None]:
    """A BEIR folder (or its corpus file read as ``beir``) as its corpus file read as JSONL, which is how BEIR reads
    it: one corpus, one index cache key, whether it is named by its folder (``sleuth.open``, ``sleuth search
    --corpus``) or by its file (``sleuth eval DATASET``); before, a folder's key covered every file in it, so new
    qrels or a note rebuilt its indexes. Any other corpus, or one given a field mapping, as given."""
    from sleuth.corpus.beir import find_file
    from sleuth.corpus.formats import detect_format

    if fmt not in (None, "beir") or fields is not None:
        return corpus, fmt
    if corpus.is_dir():
        if fmt is None and detect_format(corpus) != "beir":
            return corpus, fmt
        return find_file(corpus, "corpus.jsonl"), None  # a folder without one: its error names corpus.jsonl
    if fmt is None or detect_format(corpus) != "jsonl":
        return corpus, fmt
    return corpus, None
