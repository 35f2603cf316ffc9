"""Train / evaluation split of SQuAD questions by article: no article is in both halves.

The default (the split of docs/dhr) alternates articles in file order: articles at even positions train, those at odd
positions are held out for evaluation. ``--train-articles`` names the train articles instead: comma-separated titles,
or a file with one title per line or JSON ``{"train": [titles]}``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError, InputError
from sleuth.io import open_text


def articles_in_order(questions: Sequence[Query]) -> list[str]:
    """The articles of the questions, in file order (``metadata["article"]``, set by the SQuAD reader)."""
    return list(dict.fromkeys(q.metadata["article"] for q in questions))


def alternating_articles(questions: Sequence[Query]) -> list[str]:
    """The default train articles: every other article in file order, starting with the first."""
    return articles_in_order(questions)[0::2]


def parse_article_list(spec: str) -> list[str]:
    """Titles from ``spec``: a file (one title per line, or JSON ``{"train": [...]}``) or comma-separated titles."""
    path = Path(spec)
    if path.is_file():
        with open_text(path) as handle:  # a byte order mark and CRLF are read; bytes that are not UTF-8: InputError
            text = handle.read()
        if text.lstrip().startswith("{"):
            try:
                titles = json.loads(text).get("train")
            except json.JSONDecodeError as exc:
                raise InputError(f"not valid JSON: {exc.msg}", path=path) from None
            if not isinstance(titles, list) or not all(isinstance(t, str) for t in titles):
                raise InputError("expected a list of article titles", path=path, field="train")
            return titles
        return [line.strip() for line in text.splitlines() if line.strip()]
    return [title.strip() for title in spec.split(",") if title.strip()]


def split_by_article(questions: Sequence[Query], train_articles: Sequence[str] | None = None
                     ) -> tuple[list[Query], list[Query], list[str]]:
    """Train-article questions, evaluation-article questions, and the train articles used (default: alternating)."""
    known = articles_in_order(questions)
    chosen = list(train_articles) if train_articles is not None else alternating_articles(questions)
    unknown = [a for a in chosen if a not in known]
    if unknown:
        raise ConfigError(f"train article(s) not in the questions: {', '.join(unknown)}")
    if not chosen or len(set(chosen)) == len(known):
        raise ConfigError("the article split needs at least one train and one evaluation article")
    train = set(chosen)
    return ([q for q in questions if q.metadata["article"] in train],
            [q for q in questions if q.metadata["article"] not in train], [a for a in known if a in train])
