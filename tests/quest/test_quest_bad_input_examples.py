"""QUEST example files that were read wrong or ended in a traceback: a query id given twice, attributions of another
shape, an original_query that is not marked text or is missing, and an --out that is a folder. Each is now one
line naming the file, line and field or option (exit 2). Real val.jsonl lines; commands run in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sleuth.errors import InputError
from tests.cli_support import one_line_error


@pytest.fixture(scope="module")
def val_rows(data_dir) -> list[dict]:
    """The first 3 examples of the real QUEST val split."""
    lines = (data_dir / "quest" / "val.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    return [json.loads(line) for line in lines]


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def same_id(val_rows, tmp_path) -> Path:
    """Two different real queries that share the id 'x'."""
    return write_rows(tmp_path / "q_dupid.jsonl", [{**val_rows[0], "id": "x"}, {**val_rows[1], "id": "x"}])


def test_predict_refuses_two_queries_with_one_id(same_id, val_rows, tmp_path, sleuth):
    """Before: exit 0, and both queries of id 'x' were written with the second query's documents."""
    documents = write_rows(tmp_path / "documents.jsonl", [{"title": t, "text": t} for t in val_rows[0]["docs"]])
    out = tmp_path / "pred.jsonl"
    line = one_line_error(sleuth("quest", "predict", same_id, "--documents", documents, "--pipeline", "quest-bm25",
                                 "--out", out))
    assert line == f"error: {same_id}:2: query id 'x' appears twice (first on line 1)"
    assert not out.exists()


def test_eval_and_parse_refuse_a_gold_id_given_twice(same_id, val_rows, tmp_path, sleuth):
    """Before: `quest eval` said "QUEST (2 queries)" but scored one (a perfect 1.0 on the second query alone), and
    `quest parse` ran without a word."""
    predictions = write_rows(tmp_path / "pred.jsonl", [{**val_rows[1], "id": "x"}])
    for command in (("eval", same_id, "--predictions", predictions), ("parse", same_id)):
        assert one_line_error(sleuth("quest", *command)).endswith("q_dupid.jsonl:2: query id 'x' appears twice "
                                                                  "(first on line 1)")


def test_a_task_of_two_files_refuses_an_id_of_both(val_rows, tmp_path):
    """Before: load_task kept both, and the gold sets keyed by id kept only the second file's."""
    from sleuth.systems.quest.task import load_task

    first = write_rows(tmp_path / "a.jsonl", [{**val_rows[0], "id": "x"}])
    second = write_rows(tmp_path / "b.jsonl", [{**val_rows[2], "id": "y"}, {**val_rows[1], "id": "x"}])
    with pytest.raises(InputError, match=r"b\.jsonl:2: query id 'x' is also on line 1 of .*a\.jsonl"):
        load_task([first, second])


@pytest.mark.parametrize("attributions, message", [
    (["x"], "field 'metadata.attributions': expected {title: [{query span: sentence}, ...]}, found list"),
    ({"T": ["a sentence"]}, "field 'metadata.attributions': 'T' holds ['a sentence'], not a list of"),
    ({"T": "a sentence"}, "field 'metadata.attributions': 'T' holds 'a sentence', not a list of"),
])
def test_corpus_refuses_attributions_of_another_shape(val_rows, tmp_path, sleuth, attributions, message):
    """Before: an AttributeError traceback ('list' object has no attribute 'items' / 'str' ... 'values')."""
    bad = {**val_rows[1], "metadata": {**val_rows[1]["metadata"], "attributions": attributions}}
    examples = write_rows(tmp_path / "attr.jsonl", [val_rows[0], bad])
    out = tmp_path / "documents.jsonl"
    line = one_line_error(sleuth("quest", "corpus", examples, "--out", out))
    assert line.startswith(f"error: {examples}:2: ") and message in line
    assert not out.exists()


def test_parse_refuses_an_original_query_that_is_not_text(val_rows, tmp_path, sleuth):
    """Before: TypeError: expected string or bytes-like object, got 'int'."""
    examples = write_rows(tmp_path / "numorig.jsonl", [val_rows[0], {**val_rows[1], "original_query": 5}])
    assert one_line_error(sleuth("quest", "parse", examples)) == (
        f"error: {examples}:2: field 'original_query': expected the query with its constraints in <mark> spans, "
        "found int")


def test_parse_refuses_examples_without_original_query(val_rows, tmp_path, sleuth):
    """Before: exit 0 with a table of n=0 and every score 0.000."""
    examples = write_rows(tmp_path / "noorig.jsonl", [{k: v for k, v in r.items() if k != "original_query"}
                                                      for r in val_rows])
    assert one_line_error(sleuth("quest", "parse", examples)) == (
        f"error: {examples}: no example has an original_query (the parser is scored against it)")


def test_parse_names_the_file_line_and_field_of_an_unknown_template(val_rows, tmp_path, sleuth):
    """Before: "field 'template': unknown QUEST template '_ and also _'": no file or line, and the field read is
    original_query (the examples' metadata.template was never read)."""
    bad = {**val_rows[1], "original_query": "<mark>a films</mark> and also <mark>b films</mark>"}
    examples = write_rows(tmp_path / "badtmpl.jsonl", [val_rows[0], bad])
    line = one_line_error(sleuth("quest", "parse", examples))
    assert line.startswith(f"error: {examples}:2: field 'original_query': unknown QUEST template '_ and also _'")


def test_commands_refuse_an_out_that_is_a_folder_before_the_work(val_rows, tmp_path, sleuth):
    """Before: `quest corpus --out FOLDER` failed only after the whole run, naming a temporary file
    ('.FOLDER.xxxx.tmp: cannot write (Is a directory)'); predict and build the same."""
    examples = write_rows(tmp_path / "val.jsonl", val_rows)
    folder = tmp_path / "jdir"
    folder.mkdir()
    dump = tmp_path / "dump.xml"
    dump.write_text("<mediawiki></mediawiki>\n", encoding="utf-8")
    for command in (("corpus", examples), ("predict", examples, "--documents", examples, "--pipeline", "quest-bm25"),
                    ("build", dump)):
        assert one_line_error(sleuth("quest", *command, "--out", folder)) == \
            f"error: --out {folder}: is a folder; give a file"
    assert list(folder.iterdir()) == []
