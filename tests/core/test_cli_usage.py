"""Usage errors, undecodable and empty input, and out-of-range numbers: one line, exit 2, never a traceback."""

from __future__ import annotations

import json

import pytest

from sleuth.errors import ConfigError
from sleuth.index.bm25 import BM25Index, BM25Params
from tests.cli_support import one_line_error


@pytest.mark.parametrize(("args", "fragment"), [
    (["search"], "Missing argument 'query'"),
    (["search", "x", "-k", "abc"], "'-k'"),
    (["serach", "x"], "No such command 'serach'"),
    (["index", "--kind"], "'--kind' requires an argument"),
    (["search", "x", "-k", "0"], "'-k'"),
    (["eval", "--max-queries", "-3"], "'--max-queries'"),
    (["eval", "--top-k", "0"], "'--top-k'"),
    (["index", "--k1", "-1", "--kind", "bm25", "--out", "unused"], "k1"),
    (["index", "--b", "7", "--kind", "bm25", "--out", "unused"], "b must be between 0 and 1"),
    (["index", "--token-pattern", "(", "--kind", "bm25", "--out", "unused"], "invalid token pattern"),
    # numbers a command would otherwise take only after building indexes, or silently (an empty predicted set,
    # every query for --max-queries 0)
    (["dhr", "compare", "--corpus", "c.jsonl", "--questions", "q.jsonl", "--k1", "0"], "'--k1'"),
    (["dhr", "compare", "--corpus", "c.jsonl", "--questions", "q.jsonl", "--top-k", "0"], "'--top-k'"),
    (["dhr", "tune", "--corpus", "c.jsonl", "--questions", "q.jsonl", "--metric-k", "0"], "'--metric-k'"),
    (["quest", "predict", "val.jsonl", "--documents", "d.jsonl", "--out", "o.jsonl", "--set-size", "0"],
     "'--set-size'"),
    (["quest", "predict", "val.jsonl", "--documents", "d.jsonl", "--out", "o.jsonl", "--ranking-depth", "0"],
     "'--ranking-depth'"),
    (["privacy", "eval", "--max-queries", "0"], "'--max-queries'"),
    (["privacy", "eval", "--depth", "0"], "'--depth'"),
    (["privacy", "search", "x", "--engine", "http://localhost:9", "-k", "0"], "'-k'"),
    (["demo", "-k", "0"], "'-k'"),
    (["cos", "train", "--negatives", "-1", "--out", "unused"], "'--negatives'"),
    # training numbers typer's min= lets through (nan) or that a trainer met only after loading its data
    (["cos", "train", "--lr", "nan", "--out", "unused"], "--lr must be a positive number, got nan"),
    (["cos", "train", "--source-temperature", "-1", "--out", "unused"], "--source-temperature must be a number >= 0"),
    (["cos", "train", "--max-length", "0", "--out", "unused"], "'--max-length'"),
    (["quest", "train", "--examples", "e.jsonl", "--learning-rate", "-1e-5", "--out", "unused"],
     "--learning-rate must be a positive number"),
    (["quest", "train-dense", "--examples", "e.jsonl", "--max-minutes", "0", "--out", "unused"],
     "--max-minutes must be a positive number"),
    (["dhr", "train", "--corpus", "c.jsonl", "--questions", "q.jsonl", "--out", "unused", "--lr", "inf"],
     "--lr must be a positive number, got inf"),
    (["dhr", "train", "--corpus", "c.jsonl", "--questions", "q.jsonl", "--out", "unused", "--steps", "0"],
     "'--steps'"),
])
def test_usage_errors_are_one_line(sleuth, args, fragment):
    one_line_error(sleuth(*args), fragment)


@pytest.mark.parametrize("args", [
    ["search", "vitamin", "--window-words", "50"],
    ["retrieve", "topics.tsv", "--out", "unused.trec", "--window-words", "50"],
    ["eval", "--window-words", "50"],
    ["serve", "--window-words", "50"],
    ["index", "--kind", "bm25", "--out", "unused", "--window-words", "50"],
])
def test_window_words_without_the_window_splitter_is_refused_everywhere(sleuth, args):
    """Before: search, retrieve, eval and serve ignored --window-words without --splitter window (index refused
    it); "options that do not apply are refused, not ignored"."""
    one_line_error(sleuth(*args), "only --splitter window cuts word windows", "--window-words does not apply")


def test_split_without_a_beir_folder_and_rrf_k_of_a_weighted_fusion_are_refused(sleuth, tmp_path):
    """Before, each was ignored (exit 0): --split beside TREC topics or run files, --rrf-k beside --method weighted
    (the same fused file with or without it)."""
    topics, run = tmp_path / "topics.tsv", tmp_path / "a.trec"
    topics.write_text("1\tvitamin d\n", encoding="utf-8")
    run.write_text("1 Q0 d1 1 2.0 x\n1 Q0 d2 2 1.0 x\n", encoding="utf-8")
    split = "--split picks the qrels split of a BEIR folder, and none is read here: --split does not apply"
    one_line_error(sleuth("retrieve", topics, "--out", tmp_path / "r.trec", "--split", "test"), split)
    one_line_error(sleuth("eval", "--run", run, "--qrels", tmp_path / "qrels.txt", "--split", "dev"), split)
    one_line_error(sleuth("fuse", run, run, "--method", "weighted", "--rrf-k", "10", "--out", tmp_path / "f.trec"),
                   "--method weighted sums normalised scores (no reciprocal ranks): --rrf-k does not apply")
    assert not (tmp_path / "r.trec").exists() and not (tmp_path / "f.trec").exists()


def test_first_messages_name_the_real_problem(sleuth, tmp_path):
    """Before: `--pipeline cutoff` said "missing key 'k'" and, with k set, that it cannot come first; a dataset path
    that is not there was "not a BEIR folder"; an eval of run files alone said "no index built by this run (loaded
    from the cache or --index)"; `sleuth index` with no corpus said nothing of the bundled SciFact."""
    one_line_error(sleuth("eval", "--pipeline", "cutoff"), "'cutoff': cuts the ranking of an earlier stage, so it "
                                                           "cannot come first")
    one_line_error(sleuth("eval", tmp_path / "arguana"), f"{tmp_path / 'arguana'}: not found (a BEIR folder")
    run, qrels = tmp_path / "a.trec", tmp_path / "qrels.txt"
    run.write_text("1 Q0 d1 1 2.0 x\n", encoding="utf-8")
    qrels.write_text("1 0 d1 1\n", encoding="utf-8")
    result = sleuth("eval", "--run", run, "--qrels", qrels, "--metric", "RR")
    assert result.returncode == 0, result.stderr
    assert "no index read: run files only" in result.stdout and "no index built" not in result.stdout
    result = sleuth("index", "--kind", "bm25", "--out", tmp_path / "bundled", env={"SLEUTH_HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "no corpus given: indexed the bundled BEIR SciFact corpus" in " ".join(result.stderr.split())


def test_bare_sleuth_prints_help(sleuth):
    for args in ([], ["dhr"]):
        result = sleuth(*args)
        assert result.returncode == 0 and "Usage: sleuth" in result.stdout and "Traceback" not in result.stderr


def test_help_has_no_typer_artifacts(sleuth):
    text = sleuth("index", "--help").stdout + sleuth("search", "--help").stdout
    assert "<bool>" not in text and "{query}" not in text and "QUERY" in text
    assert "sleuth[ray]" in " ".join(sleuth("index", "--help").stdout.split()).replace("│ ", "")


#: one name a concept across commands: an older spelling may stay beside the shared one, never alone
SHARED_NAMES = {"--steps": "--max-steps", "--time-budget": "--max-minutes", "--learning-rate": "--lr",
                "--limit": "--max-queries"}


def command_options() -> dict[str, list[list[str]]]:
    """``{"dhr train": [["--max-steps", "--steps"], ...]}``: every visible command's options, each with its names."""
    import typer

    from sleuth.cli.main import register

    found: dict[str, list[list[str]]] = {}

    def walk(command, path: list[str]) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                if not getattr(sub, "hidden", False):
                    walk(sub, [*path, name])
        else:
            found[" ".join(path)] = [list(p.opts) for p in command.params if p.param_type_name == "option"]

    walk(typer.main.get_command(register()), [])
    return found


def test_an_option_has_one_name_across_commands():
    """Before: `sleuth dhr train --steps`, `cos train --time-budget`, `quest train --learning-rate` and `cos eval
    --limit` where every other command says --max-steps, --max-minutes, --lr and --max-queries."""
    options = command_options()
    assert {"dhr train", "cos train", "quest train", "cos eval", "eval"} <= set(options)
    lone = [f"{command} {names[0]}" for command, params in options.items() for names in params
            if any(name in SHARED_NAMES and SHARED_NAMES[name] not in names for name in names)]
    assert lone == []
    assert ["--max-queries", "--limit"] in options["cos eval"] and ["--max-steps", "--steps"] in options["dhr train"]


def broken_summary_lines(help_text: str) -> list[str]:
    """Rows of a ``--help`` commands list after which the summary breaks early: the next row (the same command's)
    begins with a word that would have fitted on this one (rich wraps greedily, so only a line break in the text
    itself does that)."""
    rows = help_text.split("Commands")[1].splitlines()[1:]
    rows = [row.strip()[1:-1] for row in rows if row.strip().startswith("│")]
    if not rows:
        return []
    offset = len(rows[0]) - len(rows[0].lstrip()) + len(rows[0].split()[0])  # the text column starts after a name
    offset += len(rows[0][offset:]) - len(rows[0][offset:].lstrip())
    width = max(len(row) for row in rows) - offset - 1  # one space of padding before the closing border
    broken = []
    for row, following in zip(rows, rows[1:]):
        if following[:offset].strip():  # the next row starts another command
            continue
        if len(row[offset:].rstrip()) + 1 + len(following[offset:].split()[0]) <= width:
            broken.append(row.strip())
    return broken


@pytest.mark.parametrize("group", [[], ["dhr"], ["cos"], ["quest"]])
def test_command_summaries_wrap_as_one_paragraph(sleuth, group):
    """Before: the commands list kept the line breaks of each docstring's first paragraph, so `sleuth dhr --help`
    read "... and the passage" / "encoder (in-batch, ..." with the rest of the row empty."""
    result = sleuth(*group, "--help", env={"COLUMNS": "100"})
    assert "Commands" in result.stdout, result.stdout
    assert broken_summary_lines(result.stdout) == []


def test_non_utf8_and_binary_input_name_file_and_line(sleuth, tmp_path):
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"_id": "a", "text": "plain"}\n{"_id": "b", "text": "caf\xe9 au lait"}\n')
    one_line_error(sleuth("index", latin, "--kind", "bm25", "--out", tmp_path / "ix"), "latin.jsonl:2",
                   "not UTF-8")
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(bytes(range(256)) * 4)
    one_line_error(sleuth("index", binary, "--kind", "bm25", "--out", tmp_path / "ix"), "blob.jsonl:1")
    trec = tmp_path / "docs.trec"
    trec.write_bytes(b"<DOC>\n<DOCNO>1</DOCNO>\ntext \xff\n</DOC>\n")
    one_line_error(sleuth("index", trec, "--kind", "bm25", "--out", tmp_path / "ix"), "docs.trec:3")
    assert not (tmp_path / "ix").exists()


def test_empty_corpus_is_one_line(sleuth, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    for kind in ("bm25", "dense"):
        one_line_error(sleuth("index", empty, "--kind", kind, "--out", tmp_path / kind),
                       "empty.jsonl: the corpus has no passages")
    stop = tmp_path / "stop.jsonl"
    stop.write_text(json.dumps({"_id": "a", "text": "the a of"}) + "\n")
    one_line_error(sleuth("index", stop, "--kind", "bm25", "--out", tmp_path / "ix"), "no indexable words")


def test_bm25_params_are_checked():
    for bad in ({"k1": -0.1}, {"b": 1.5}, {"b": -0.1}, {"k1": "x"}, {"delta": -1}, {"k1": float("nan")}):
        with pytest.raises(ConfigError):
            BM25Params(**bad)
    assert BM25Params(k1=0, b=1).b == 1


def test_update_counts_a_repeated_id_once(sleuth, tmp_path, scifact_jsonl, scifact_rows):
    out = tmp_path / "ix"
    assert sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", out).returncode == 0
    first = scifact_rows[0]["_id"]
    result = sleuth("update", out, "--delete", f"{first},{first}")
    assert result.returncode == 0 and "deleted 1," in result.stderr and "now 399 passages" in result.stderr
    assert BM25Index.load(out).manifest.count == 399


def test_eval_of_index_folders_needs_no_corpus(sleuth, tmp_path, data_dir):
    vaswani = data_dir / "vaswani"
    assert sleuth("index", vaswani / "doc-text.trec", "--kind", "bm25", "--out", tmp_path / "vx").returncode == 0
    result = sleuth("eval", "--index", tmp_path / "vx", "--queries", vaswani / "query-text.trec",
                    "--qrels", vaswani / "qrels", "--max-queries", "20", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["pipelines"][0]["measures"]["nDCG@10"] > 0.3
    one_line_error(sleuth("eval", "--queries", vaswani / "query-text.trec", "--qrels", vaswani / "qrels"),
                   "--corpus")


def test_no_progress_bars_when_stderr_is_not_a_terminal(sleuth, tmp_path, scifact_jsonl):
    result = sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", tmp_path / "ix")
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stderr and "it/s" not in result.stderr
    assert result.stderr.strip().splitlines() == [line for line in result.stderr.strip().splitlines()
                                                  if line.startswith("bm25 index of 400 passages")]


def test_a_runs_dir_that_cannot_be_written_fails_before_the_evaluation(sleuth, tmp_path, scifact_jsonl):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    result = sleuth("eval", "--corpus", scifact_jsonl, "--queries", "missing-queries.jsonl", "--qrels",
                    "missing-qrels.tsv", "--runs-dir", blocker / "runs")
    one_line_error(result, f"--runs-dir {blocker / 'runs'}: {blocker} is a file, not a folder")


@pytest.mark.parametrize("args", [
    ["quest", "parse", ""],
    ["index", "", "--kind", "bm25"],
    ["search", "q", "--corpus", " "],
    ["cos", "eval", "--questions", "questions.json", "--questions", ""],
])
def test_an_empty_path_names_the_parameter(sleuth, args):
    """Typer turns '' into Path('.'): `sleuth quest parse ''` read the current folder and said ".: is a folder"."""
    name = {"quest": "'examples'", "index": "'corpus'", "search": "'--corpus'", "cos": "'--questions'"}[args[0]]
    one_line_error(sleuth(*args), f"Invalid value for {name}: an empty path")
