"""The front door: ``import sleuth`` is fast and lazy, ``sleuth.open`` goes from a string to a workspace, pipelines
take keys checked like YAML's, an experiment prints as a compact table and converts to pandas, and the README's
Python quickstart runs as written on real data (a slice of SciFact)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import sleuth
from sleuth.errors import ConfigError, InputError
from sleuth.pipelines.config import builtin_pipelines, load_pipeline
from sleuth.pipelines.workspace import CorpusSource, Workspace

ROOT = Path(__file__).resolve().parents[2]


def readme_block(language: str, after: str) -> str:
    """The first fenced ``language`` block of README.md after the line ``after``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(after)
    match = re.compile(rf"```{language}\n(.*?)```", re.S).search(text, start)
    assert match, f"README.md has no {language} block after {after!r}"
    return match.group(1)


@pytest.fixture
def scifact_slice(tmp_path, data_dir) -> Path:
    """A folder ``scifact/`` with the whole SciFact corpus and queries and the judgements of its first 30 queries."""
    source, folder = data_dir / "scifact", tmp_path / "scifact"
    (folder / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl"):
        (folder / name).symlink_to(source / name)
    lines = (source / "qrels" / "train.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    kept, queries = [lines[0]], set()
    for line in lines[1:]:
        queries.add(line.split("\t")[0])
        if len(queries) > 30:
            break
        kept.append(line)
    (folder / "qrels" / "train.tsv").write_text("".join(kept), encoding="utf-8")
    return folder


def test_import_sleuth_loads_no_submodule_until_asked():
    code = ("import sys, sleuth; loaded = sorted(m for m in sys.modules if m.startswith('sleuth.') or m == 'numpy');"
            "print(loaded); sleuth.Run; print('sleuth.stages.run' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.split("\n")[:2] == ["[]", "True"]


JAX_PROBE = "import os, sleuth; print(os.environ['XLA_PYTHON_CLIENT_PREALLOCATE'])"
HUB_PROBE = "import sleuth, huggingface_hub.constants as c; print(c.HF_HUB_OFFLINE)"


@pytest.mark.parametrize("variable, probe, preset, expected", [
    # bm25s initialises JAX on import where JAX is installed, and JAX would take 75 % of the GPU's memory up front
    ("XLA_PYTHON_CLIENT_PREALLOCATE", JAX_PROBE, None, "false"),
    ("XLA_PYTHON_CLIENT_PREALLOCATE", JAX_PROBE, "true", "true"),
    # huggingface_hub reads HF_HUB_OFFLINE once, on import: set by the loaders, it came too late, and a model name
    # that was not a folder was retried against the hub for a minute
    ("HF_HUB_OFFLINE", HUB_PROBE, None, "True"),
    ("HF_HUB_OFFLINE", HUB_PROBE, "0", "False"),
])
def test_import_sleuth_sets_safe_library_defaults_unless_the_user_chose(variable, probe, preset, expected):
    env = {k: v for k, v in os.environ.items() if k != variable}
    if preset is not None:
        env[variable] = preset
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    assert out.stdout.strip() == expected


def test_every_public_name_resolves():
    for name in sleuth.__all__:
        assert getattr(sleuth, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        sleuth.Nope  # noqa: B018


def test_corpus_source_takes_a_string_path(scifact_jsonl):
    source = CorpusSource(str(scifact_jsonl))
    assert source.path == scifact_jsonl
    assert len(source.checked_passages()) == 400


def test_a_misspelt_key_is_the_same_error_from_python_and_yaml(scifact_jsonl, tmp_path):
    ws = sleuth.open(str(scifact_jsonl), progress=False)
    with pytest.raises(ConfigError) as from_python:
        ws.pipeline("bm25", kk=100)
    config = tmp_path / "mine.yaml"
    config.write_text("stages:\n  - bm25: {kk: 100}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as from_yaml:
        ws.pipeline(str(config))
    problem = "stage 'bm25': unknown key 'kk' (known: k, index,"
    assert problem in str(from_python.value) and problem in str(from_yaml.value)
    with pytest.raises(ConfigError, match="keys can be set on a one-stage pipeline only"):
        load_pipeline("quest-bm25-setops", ws, k=3)


def test_keys_and_stage_names_build_pipelines_that_keep_their_stages_names(scifact_jsonl):
    ws = sleuth.open(scifact_jsonl, progress=False)
    bm25 = ws.pipeline("bm25", k=5, name="mine")
    assert bm25.name == "mine" and [s.name for s in bm25.stages] == ["mine"]  # the pipeline named as its stage
    assert ws.pipeline("bm25", k=5).name == "bm25"  # the built-in's name where no name is given
    assert bm25.description and "BM25" in bm25.description
    hits = bm25.search("vitamin d deficiency", k=10)
    assert len(hits) == 5 and hits[0].score >= hits[-1].score
    cut = ws.pipeline("cutoff", k=2)  # a stage that is not a built-in pipeline
    assert cut.name == "cutoff" and len((bm25 >> cut)("vitamin d deficiency")["q1"]) == 2
    with pytest.raises(ConfigError, match="cuts the ranking of an earlier stage"):  # alone it has nothing to cut
        cut("vitamin d deficiency")


def test_an_experiment_prints_as_a_compact_table_and_converts_to_pandas(scifact_slice):
    ws = sleuth.open(scifact_slice, progress=False)
    queries, qrels = sleuth.read_queries(scifact_slice), sleuth.read_qrels(scifact_slice)
    assert len(queries) == 30 and set(qrels) == {q.id for q in queries}
    bm25, strict = ws.pipeline("bm25", k=1000), ws.pipeline("bm25", k=1000, k1=1.2, b=0.75, name="strict")
    result = sleuth.Experiment([bm25, ("strict", strict)], queries, qrels, ["nDCG@10", "R@100"]).run()
    text = repr(result)
    assert len(text) < 2000 and str(result) == text  # the hits (30 x 1000 texts) are not printed
    assert "nDCG@10" in text and "strict" in text and "Experiment (30 queries)" in text
    frame = result.to_pandas()
    assert list(frame["name"]) == ["bm25", "strict"]
    assert frame.loc[0, "nDCG@10"] == pytest.approx(result.aggregate["bm25"]["nDCG@10"])
    assert 0.4 < frame.loc[0, "nDCG@10"] < 1.0
    assert frame.loc[1, "nDCG@10 p-value"] == pytest.approx(result.pvalues["strict"]["nDCG@10"])
    assert result.frame.shape == frame.shape


def test_the_readme_python_quickstart_runs_as_written(scifact_slice, monkeypatch):
    code = readme_block("python", "## Pipelines")
    monkeypatch.chdir(scifact_slice.parent)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    result, frame = namespace["result"], namespace["frame"]
    assert result.names == ["bm25", "dense", "hybrid"] and result.num_queries == 30
    assert all(result.aggregate[name]["nDCG@10"] > 0.4 for name in result.names)
    assert list(frame["name"]) == result.names and len(namespace["hits"]) == 10
    assert len(repr(result)) < 2000


def test_the_readme_hybrid_yaml_is_the_builtin_hybrid():
    documented = yaml.safe_load(readme_block("yaml", "## Pipelines"))
    shipped = yaml.safe_load(builtin_pipelines()["hybrid"].read_text(encoding="utf-8"))
    assert documented == shipped


def test_a_workspace_without_corpus_names_the_problem():
    with pytest.raises(ConfigError, match="corpus not found: no-such-corpus"):
        sleuth.open("no-such-corpus")
    assert isinstance(sleuth.open(progress=False), Workspace)  # the bundled SciFact


def test_a_path_that_is_not_a_corpus_fails_at_open_not_at_first_use(tmp_path, scifact_jsonl):
    notes = tmp_path / "notes.txt"
    notes.write_text("some words on one line\n", encoding="utf-8")
    with pytest.raises(InputError, match="notes.txt: cannot tell the corpus format; pass --format"):
        sleuth.open(notes)
    with pytest.raises(ConfigError, match="unknown corpus format 'jsnol'"):
        sleuth.open(scifact_jsonl, format="jsnol")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="corpus.jsonl"):
        sleuth.open(empty, format="beir")  # a folder without corpus.jsonl
    # detected: an empty folder, and a folder of other files, say so (both said "cannot tell the corpus format")
    with pytest.raises(InputError, match="empty: an empty folder: no corpus in it"):
        sleuth.open(empty)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("some words\n", encoding="utf-8")
    with pytest.raises(InputError, match="other: a folder is read as a BEIR folder .* neither"):
        sleuth.open(other)
    with pytest.raises(ConfigError, match="field mapping applies to the jsonl format only"):
        sleuth.open(scifact_jsonl, format="beir", fields={"text": "body"})
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    with pytest.raises(InputError, match="no 'train' split; the splits present are test"):  # was: file not found
        sleuth.read_qrels(beir)
    assert sleuth.read_qrels(beir, split="test") == {"q1": {"d1": 1}}
    with pytest.raises(InputError, match=r"unknown field mapping key\(s\) \['txt'\]; use id, title, text"):
        sleuth.open(scifact_jsonl, fields={"txt": "body"})  # before: accepted, then failed at the first search
    # before: a format without a corpus was dropped without a word (the bundled SciFact searched instead), and a
    # field mapping without one said "a field mapping applies to the jsonl format only, not to 'beir'"
    with pytest.raises(ConfigError, match=r"^format 'tsv' is for a corpus you give, and none was given"):
        sleuth.open(format="tsv")
    with pytest.raises(ConfigError, match=r"^a field mapping is for a corpus you give"):
        sleuth.open(fields={"text": "body"})
    with pytest.raises(ConfigError, match="a pipeline is named by .*, got NoneType"):  # was a TypeError
        sleuth.open(scifact_jsonl).pipeline(None)


def test_a_beir_folder_is_keyed_by_its_corpus_file(tmp_path):
    """`sleuth.open(folder)` keyed its indexes on every file of the folder (new qrels, a touched queries.jsonl or a
    note rebuilt them) and apart from the CLI's key for the same corpus (`sleuth eval DATASET` names its
    corpus.jsonl): one key now, the corpus file's, whichever way the corpus is named."""
    import shutil

    from sleuth.corpus.bundled import bundled_dataset_dir
    from sleuth.pipelines.sources import corpus_source

    folder = tmp_path / "scifact"
    shutil.copytree(bundled_dataset_dir(), folder)
    workspace = sleuth.open(folder)
    key = workspace.source().fingerprint()
    assert key == corpus_source(folder / "corpus.jsonl.gz").fingerprint() == \
        corpus_source(folder, "beir").fingerprint()
    (folder / "NOTES.txt").write_text("judged by hand\n")
    os.utime(folder / "queries.jsonl.gz")
    assert sleuth.open(folder).source().fingerprint() == key
    (folder / "corpus.jsonl.gz").write_bytes((folder / "corpus.jsonl.gz").read_bytes())  # the corpus rewritten
    assert sleuth.open(folder).source().fingerprint() != key
    hits = sleuth.open(folder, progress=False).pipeline("bm25").search("vitamin d", k=3)
    assert len(hits) == 3 and all(hit.text for hit in hits)


def test_documents_in_memory_open_as_a_corpus(tmp_path, scifact_rows):
    """sleuth.open(DataFrame) or sleuth.open(list of dicts) was a TypeError ("expected str, bytes or os.PathLike");
    PyTerrier's IterDictIndexer and bm25s take documents in memory. They are written once, named by their content,
    and searched as the same documents in a JSONL file are."""
    import json

    import pandas as pd

    rows = scifact_rows[:120]
    frame = pd.DataFrame({"docno": [r["_id"] for r in rows], "title": [r["title"] for r in rows],
                          "text": [r["text"] for r in rows]})
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"_id": r["_id"], "title": r["title"], "text": r["text"]}) + "\n"
                            for r in rows), encoding="utf-8")
    query = rows[7]["title"]
    expected = [(h.id, h.score) for h in sleuth.open(path, progress=False).pipeline("bm25").search(query, k=5)]
    from_frame = sleuth.open(frame, progress=False)
    assert [(h.id, h.score) for h in from_frame.pipeline("bm25").search(query, k=5)] == expected
    assert expected[0][0] == rows[7]["_id"]
    again = sleuth.open(frame.copy(), progress=False)
    assert again.source().path == from_frame.source().path and again.source().fingerprint() == \
        from_frame.source().fingerprint()  # the same documents: the same file, the same index
    records = [{"key": r["_id"], "body": r["text"]} for r in rows]
    mapped = sleuth.open(records, fields={"id": "key", "text": "body"}, progress=False)
    assert mapped.pipeline("bm25").search(rows[7]["text"], k=1)[0].id == rows[7]["_id"]
    with pytest.raises(ConfigError, match="takes a corpus path, a pandas DataFrame or a list of dicts; got int"):
        sleuth.open(42)
    with pytest.raises(ConfigError, match="document 2 of the list is a str"):
        sleuth.open([{"id": "a", "text": "x"}, "b"])
    with pytest.raises(ConfigError, match="no documents"):
        sleuth.open(frame.iloc[0:0])
