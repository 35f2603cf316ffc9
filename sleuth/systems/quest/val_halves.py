"""The fixed split of QUEST's val queries into a tuning half and a report half.

Every set rule (threshold, score gap, keep-top, the retriever's vote weight, ``not_weight``, a retriever's top k) is
chosen on the tuning half; figures are reported on the report half, which no rule has seen. The rule, written down
once here: a query belongs to the **tuning half when the SHA-1 of its text (UTF-8) is even** as an integer, else to
the report half. It depends on the query text alone (not on file order or line-number ids), so it is stable when the
file is reordered or grows. On QUEST val's 182 films and books queries it gives 89 tuning and 93 report queries.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from sleuth.corpus.model import Query

HALVES = ("tune", "report")


def half_of(text: str) -> str:
    """``"tune"`` or ``"report"``: the half a query with this text belongs to."""
    return HALVES[int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16) % 2]


def split_halves(queries: Sequence[Query]) -> tuple[list[Query], list[Query]]:
    """The tuning half and the report half of ``queries``, each in the given order."""
    tune = [q for q in queries if half_of(q.text) == "tune"]
    report = [q for q in queries if half_of(q.text) == "report"]
    return tune, report
