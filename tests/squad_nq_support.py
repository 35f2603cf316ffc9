"""Small real corpora of the DHR tests, written as files of their own: SQuAD 2.0 dev articles and the first NQ
passages with the NQ questions whose gold passage is among them."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

from sleuth.corpus.jsonl import iter_jsonl


def squad_articles(data_dir: Path, folder: Path, titles: Collection[str]) -> Path:
    """``squad2/dev-v2.0.json`` restricted to the articles ``titles``, written as ``folder/squad.json``."""
    squad = json.loads((data_dir / "squad2" / "dev-v2.0.json").read_text(encoding="utf-8"))
    squad["data"] = [article for article in squad["data"] if article["title"] in titles]
    path = folder / "squad.json"
    path.write_text(json.dumps(squad), encoding="utf-8")
    return path


def nq_slice(data_dir: Path, folder: Path, passages: int) -> tuple[Path, list[dict]]:
    """The first ``passages`` NQ passages written as ``folder/nq.jsonl``, and the NQ questions (``id``, ``question``,
    ``gold_passage``, ...) whose gold passage is among them."""
    lines = (data_dir / "nq" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:passages]
    path = folder / "nq.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    in_slice = {record["_id"] for _, record in iter_jsonl(path)}
    questions = [question for _, question in iter_jsonl(data_dir / "nq" / "questions.jsonl")]
    return path, [q for q in questions if q["gold_passage"] in in_slice]
