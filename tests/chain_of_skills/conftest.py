"""Shared Chain-of-Skills test data: the first two HotpotQA dev questions and their 20 context paragraphs."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from sleuth.corpus.hotpotqa import hotpotqa_context_documents, read_hotpotqa_questions
from sleuth.corpus.model import Document, Query


@pytest.fixture(scope="session")
def two_dev_questions(data_dir) -> tuple[list[Query], list[Document]]:
    """The first two dev questions and the documents of their context paragraphs (sentences in metadata)."""
    path = data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"
    questions = list(itertools.islice(read_hotpotqa_questions(path), 2))
    wanted = {t for q in questions for t in q.metadata["context_titles"]}
    return questions, [d for d in hotpotqa_context_documents(path) if d.id in wanted]


@pytest.fixture
def two_question_corpus(two_dev_questions, tmp_path) -> Path:
    """Those paragraphs as a HotpotQA-format corpus file (title -> sentences) in the test's folder."""
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps({d.id: d.metadata["sentences"] for d in two_dev_questions[1]}), encoding="utf-8")
    return path
