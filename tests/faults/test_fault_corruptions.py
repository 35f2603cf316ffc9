"""Fault suite, corruptions of the manifest and CURRENT: each is refused with one line naming the file (exit 2 from
the CLI), or (a flip that changes nothing, e.g. in trailing whitespace) gives exactly the same index; never a
different one."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from sleuth.errors import IndexError_
from sleuth.index.bm25 import BM25Index
from sleuth.index.manifest import current_generation, read_manifest
from sleuth.index.updates import add_documents, passages_from_records

NEW = [{"id": f"new{i}", "text": f"quokka zebra note {i}"} for i in range(2)]


@pytest.fixture
def updated(tmp_path, scifact_passages) -> Path:
    """A BM25 index of 50 passages updated twice (CURRENT names gen-000002)."""
    target = tmp_path / "ix"
    BM25Index.build(scifact_passages[:50], target, show_progress=False)
    add_documents(target, passages_from_records(NEW[:1]))
    add_documents(target, passages_from_records(NEW[1:]))
    return target


def refused(target: Path, name: str) -> str:
    with pytest.raises(IndexError_) as info:
        BM25Index.load(target)
    assert name in str(info.value) and "\n" not in str(info.value)
    return str(info.value)


def test_a_flipped_bit_in_the_token_pattern_is_refused(tmp_path, scifact_passages):
    BM25Index.build(scifact_passages[:50], tmp_path / "ix", show_progress=False)
    manifest = tmp_path / "ix" / "manifest.json"
    text = manifest.read_text()
    at = text.index("w", text.index('"pattern": "'))  # \\w -> \\v: every query would find nothing
    manifest.write_text(text[:at] + chr(ord(text[at]) ^ 1) + text[at + 1:])
    assert "checksum" in refused(tmp_path / "ix", "manifest.json")


@pytest.mark.parametrize("edit", [("\"k1\": 0.9", "\"k1\": 0.1"), ("\"b\": 0.4", "\"b\": 0.9")])
def test_an_edited_parameter_of_the_served_generation_is_refused_at_load_and_update(updated, edit):
    manifest = current_generation(updated) / "manifest.json"
    manifest.write_text(manifest.read_text().replace(*edit))
    refused(updated, "manifest.json")
    with pytest.raises(IndexError_, match="manifest"):
        add_documents(updated, passages_from_records([{"id": "late", "text": "late text"}]))


def test_a_dense_max_length_edit_is_refused(tmp_path):
    """The checksum covers the encoder spec of a dense manifest (max_length 256 -> 156 changed rankings)."""
    from sleuth.index.manifest import Manifest, write_manifest

    (tmp_path / "ix").mkdir()
    spec = {"name": "minilm", "dim": 384, "max_length": 256}
    write_manifest(tmp_path / "ix", Manifest(kind="dense", count=0, encoder=spec, dimensions=384))
    manifest = tmp_path / "ix" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"max_length": 256', '"max_length": 156'))
    with pytest.raises(IndexError_, match="manifest.json: corrupt manifest"):
        read_manifest(tmp_path / "ix", verify=False)


def test_current_naming_an_older_generation_is_refused(updated):
    (updated / "CURRENT").write_text("gen-000001\n")
    assert "older than gen-000002" in refused(updated, "CURRENT")


def test_a_deleted_current_is_refused_not_generation_zero(updated):
    (updated / "CURRENT").unlink()
    assert "missing" in refused(updated, "CURRENT")


def test_a_non_utf8_current_is_named(updated, sleuth):
    (updated / "CURRENT").write_bytes(b"gen-\xff\xfe\n")
    refused(updated, "CURRENT")
    done = sleuth("search", "cancer", "--index", updated)
    assert done.returncode == 2 and "CURRENT" in done.stderr and "Traceback" not in done.stderr


def test_a_generation_manifest_swapped_for_another_is_refused(updated):
    generation = current_generation(updated)
    previous = updated / "generations" / "gen-000001" / "manifest.json"
    (generation / "manifest.json").write_bytes(previous.read_bytes())
    assert "differs from the manifest" in refused(updated, "gen-000002/manifest.json")


def test_every_bit_flip_of_current_and_a_sample_of_the_manifest_is_refused_or_harmless(updated):
    """Fuzz: every single-bit flip of CURRENT's generation line and 400 seeded ones of the rest of CURRENT and of
    the served manifest each."""
    expected = (current_generation(updated), read_manifest(current_generation(updated), verify=False))
    current, manifest = updated / "CURRENT", current_generation(updated) / "manifest.json"
    for path, every, sample in ((current, len(b"gen-000002\n") * 8, 400), (manifest, 0, 400)):
        original = path.read_bytes()
        for bit in [*range(every), *random.Random(30).sample(range(every, len(original) * 8), sample)]:
            damaged = bytearray(original)
            damaged[bit // 8] ^= 1 << (bit % 8)
            path.write_bytes(bytes(damaged))
            try:
                served = current_generation(updated)
                outcome = (served, read_manifest(served, verify=False))
            except IndexError_:
                continue
            assert outcome == expected, f"{path.name}: bit {bit} flipped gives another index"
        path.write_bytes(original)


def test_an_index_of_the_previous_format_still_loads(tmp_path, scifact_passages):
    """Format 1 (no manifest checksum, a CURRENT of just the name) loads when CURRENT names the newest generation."""
    target = tmp_path / "ix"
    BM25Index.build(scifact_passages[:50], target, show_progress=False)
    add_documents(target, passages_from_records(NEW[:1]))
    manifest = current_generation(target) / "manifest.json"
    raw = json.loads(manifest.read_text())
    raw.pop("checksum")
    raw["format_version"] = 1
    manifest.write_text(json.dumps(raw))
    (target / "CURRENT").write_text("gen-000001\n")
    assert len(BM25Index.load(target)) == 51
