"""Small real corpora of the DHR tests, written as files of their own: SQuAD 2.0 dev articles and the first NQ
passages with the NQ questions whose gold passage is among them, or the first NQ questions with their gold passages."""

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


def nq_questions_with_gold(data_dir: Path, folder: Path, questions: int, others: int) -> Path:
    """The first ``questions`` NQ questions as ``folder/questions.jsonl`` and a corpus of their gold passages plus the
    first ``others`` other passages as ``folder/corpus.jsonl``; returns ``folder``."""
    chosen = [json.loads(line) for line in open(data_dir / "nq" / "questions.jsonl", encoding="utf-8")][:questions]
    gold = {q["gold_passage"] for q in chosen}
    rows = [json.loads(line) for line in open(data_dir / "nq" / "corpus.jsonl", encoding="utf-8")]
    kept = [r for r in rows if r["_id"] in gold] + [r for r in rows if r["_id"] not in gold][:others]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in chosen), encoding="utf-8")
    return folder
