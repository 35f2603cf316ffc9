"""The QUEST construction tool: size constraints on synthetic label sets, and a real run on the Wikipedia dump."""

from __future__ import annotations

from collections import Counter

import pytest

from sleuth.systems.quest.build import (
    PAPER,
    RELAXED,
    SizeLimits,
    answer_ok,
    build_queries,
    category_sets,
    compositions,
    difference_ok,
    intersection_ok,
    query_text,
    union_ok,
)
from sleuth.systems.quest.templates import TEMPLATES, parse_marked


def ids(prefix: str, start: int, stop: int) -> frozenset[str]:
    return frozenset(f"{prefix}{i}" for i in range(start, stop))


def test_answer_set_bounds():
    assert not answer_ok(ids("e", 0, 1)) and answer_ok(ids("e", 0, 2)) and answer_ok(ids("e", 0, 20))
    assert not answer_ok(ids("e", 0, 21))


def test_intersection_needs_two_large_operands():
    big_a, big_b = ids("e", 0, 51), ids("e", 40, 91)  # 51 each, overlap 11
    assert intersection_ok(big_a, big_b) and answer_ok(big_a & big_b)
    assert not intersection_ok(ids("e", 0, 50), big_b)  # |A| = 50 is not > 50


def test_difference_bounds():
    a = ids("e", 0, 60)
    b = ids("e", 15, 115)  # |A| 60, |B| 100, overlap 45/60 = 0.75 < 0.8
    assert difference_ok(a, b) and len(a - b) == 15 and answer_ok(a - b)
    assert not difference_ok(ids("e", 0, 200), b)  # |A| must be < 200
    assert not difference_ok(a, ids("e", 0, 51) | ids("x", 0, 10))  # overlap 51/60 = 0.85 is not < 0.8
    assert not difference_ok(a, ids("e", 20, 70))  # |B| = 50 is not > 50
    assert not difference_ok(a, ids("x", 0, 100))  # no overlap at all
    assert not difference_ok(a, ids("e", 0, 10_000))  # |B| must be < 10000


def test_union_overlap_between_zero_and_a_third():
    a, b = ids("e", 0, 5), ids("e", 4, 9)  # overlap 1, union 9: 1 < 3
    assert union_ok(a, b)
    assert not union_ok(a, ids("x", 0, 5))  # disjoint
    assert not union_ok(a, ids("e", 2, 7))  # overlap 3 is not < 7 / 3
    assert not union_ok(ids("e", 0, 2), ids("e", 1, 6))  # |A| = 2 < 3


def test_compositions_on_a_synthetic_label_set():
    labels: dict[str, list[str]] = {}
    groups = {"Big A": ids("e", 0, 60), "Big B": ids("e", 45, 120), "Big E": ids("e", 15, 140),
              "Small C": ids("e", 55, 58) | ids("z", 0, 3), "Small D": ids("z", 2, 6),
              "Articles with dead links": ids("e", 0, 100)}
    for category, entities in groups.items():
        for entity in entities:
            labels.setdefault(entity, []).append(category)
    sets = category_sets(labels)
    assert "Articles with dead links" not in sets  # maintenance categories are never query material
    found = {t: list(compositions(t, sets, PAPER)) for t in TEMPLATES}
    assert [c for c, _ in found["_ that are also _"]] == [("Big A", "Big B")]  # both > 50, |A ∩ B| = 15
    # A \ E: 50 < 60 < 200, 50 < 125 < 10000, overlap 45/60 = 0.75 < 0.8, answer e0..e14; A \ B has 45 entities
    assert [c for c, _ in found["_ that are not _"]] == [("Big A", "Big E")]
    assert found["_ that are not _"][0][1] == ids("e", 0, 15)
    assert found["_ that are also _"][0][1] == ids("e", 45, 60)
    assert ("Small C", "Small D") in [tuple(sorted(c)) for c, _ in found["_ or _"]]  # overlap 1 of 9
    for template, results in found.items():
        for categories, answer in results:
            assert answer_ok(answer, PAPER), (template, categories)


def test_three_way_templates_apply_the_checks_recursively():
    sets = {"A": ids("e", 0, 80), "B": ids("e", 10, 100), "C": ids("e", 60, 75) | ids("y", 0, 50)}
    triples = list(compositions("_ that are also both _ and _", sets, PAPER))
    # A ∩ B has 70 > 50 entities, C has 65 > 50, A ∩ B ∩ C = e60..e74 (15 entities)
    assert triples == [(("A", "B", "C"), ids("e", 60, 75))]
    assert list(compositions("_ that are also both _ and _", sets, SizeLimits(intersection_operand_over=70))) == []


def test_query_text_matches_quest_original_query_format():
    text = query_text("_ that are also _ but not _", ("Birds of Chile", "Birds of Peru", "Fauna of the Guianas"),
                      marked=True)
    assert text == ("<mark>Birds of Chile</mark> that are also <mark>Birds of Peru</mark> but not "
                    "<mark>Fauna of the Guianas</mark>")
    assert parse_marked(text).constraints == ("Birds of Chile", "Birds of Peru", "Fauna of the Guianas")


def test_real_run_on_the_wikipedia_dump(data_dir):
    from sleuth.corpus.mediawiki import read_mediawiki

    labels = {doc.title: doc.metadata["categories"]
              for path in sorted((data_dir / "wikipedia").glob("*.bz2")) for doc in read_mediawiki(path)}
    paper = build_queries(labels, limits=PAPER)
    relaxed = build_queries(labels, limits=RELAXED, per_template=5)
    paper_counts = Counter(e["metadata"]["template"] for e in paper)
    # 110 articles: no category has more than 50 members, so the paper's intersection/difference bounds reject all
    assert paper_counts["_ that are also _"] == 0 and paper_counts["_ that are not _"] == 0
    assert Counter(e["metadata"]["template"] for e in relaxed) == Counter({t: 5 for t in TEMPLATES})
    for example in relaxed:
        parsed = parse_marked(example["original_query"])
        assert parsed.template == example["metadata"]["template"]
        assert 2 <= len(example["docs"]) <= 20 and set(example["docs"]) <= set(labels)
        assert example["query"] == query_text(parsed.template, parsed.constraints)


@pytest.mark.parametrize("limits", [PAPER, RELAXED])
def test_sampling_is_seeded(limits):
    labels = {f"e{i}": [f"cat{i % 7}", f"cat{i % 5}", "shared"] for i in range(40)}
    assert build_queries(labels, limits=limits, seed=3) == build_queries(labels, limits=limits, seed=3)
