"""The corpus options, declared once and taken alike by every command that reads a corpus (index, eval, search,
retrieve, serve): ``--format`` (the reader; its help lists exactly :data:`sleuth.corpus.formats.FORMATS`),
``--field`` (the JSONL field mapping), ``--splitter`` / ``--window-words`` (how documents become passages) and
``--split`` (the qrels split of a BEIR folder), ``--distractors`` (corpora mixed in), shown together under
one heading."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sleuth.corpus.formats import FORMATS
from sleuth.corpus.splitters import MIN_WORDS

PANEL = "Corpus options"

Format = Annotated[str | None, typer.Option(
    "--format", rich_help_panel=PANEL,
    help=f"Corpus reader: {', '.join(FORMATS)} (default: detected from the content).")]
Fields = Annotated[list[str] | None, typer.Option(
    "--field", rich_help_panel=PANEL,
    help="Field mapping for jsonl corpora (repeatable), e.g. id=docid, text=body; without one the id is the first "
         "of _id, id, docid, doc_id, pid.")]
Split = Annotated[str, typer.Option(
    "--split", rich_help_panel=PANEL, help="Qrels split of a BEIR folder (qrels/<split>.tsv).")]
Splitter = Annotated[str, typer.Option(
    "--splitter", rich_help_panel=PANEL,
    help=f"Passages: none (one per document), sections (DHR; a lead or section of {MIN_WORDS} words or fewer is "
         "dropped), window.")]
WindowWords = Annotated[int, typer.Option(
    "--window-words", min=1, rich_help_panel=PANEL, help="Words per passage for --splitter window.")]
Distractors = Annotated[list[Path] | None, typer.Option(
    "--distractors", rich_help_panel=PANEL,
    help="Further corpus (repeatable, format detected) indexed with the corpus as distractor documents.")]
