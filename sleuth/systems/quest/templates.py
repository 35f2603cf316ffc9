"""QUEST's seven set-operation templates (Malaviya et al., ACL 2023, Table 1), as the dataset's ``metadata.template`` strings spell
them, and a parsed query: its template and its atomic constraints in template order.

In every template the constraints are combined left to right as the template reads; only the last constraint of the
two difference templates is negated:

| template | operation |
|---|---|
| ``_`` | A |
| ``_ or _`` | A ∪ B |
| ``_ that are also _`` | A ∩ B |
| ``_ that are not _`` | A \\ B |
| ``_ or _ or _`` | A ∪ B ∪ C |
| ``_ that are also both _ and _`` | A ∩ B ∩ C |
| ``_ that are also _ but not _`` | A ∩ B \\ C |
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sleuth.errors import InputError

ATOMIC = "_"
UNION = "_ or _"
INTERSECTION = "_ that are also _"
DIFFERENCE = "_ that are not _"
UNION3 = "_ or _ or _"
INTERSECTION3 = "_ that are also both _ and _"
INTERSECTION_DIFFERENCE = "_ that are also _ but not _"
TEMPLATES = (ATOMIC, UNION, INTERSECTION, DIFFERENCE, UNION3, INTERSECTION3, INTERSECTION_DIFFERENCE)
SYMBOLS = {ATOMIC: "A", UNION: "A∪B", INTERSECTION: "A∩B", DIFFERENCE: "A\\B", UNION3: "A∪B∪C",
           INTERSECTION3: "A∩B∩C", INTERSECTION_DIFFERENCE: "A∩B\\C"}
UNIONS = frozenset({UNION, UNION3})
DIFFERENCES = frozenset({DIFFERENCE, INTERSECTION_DIFFERENCE})
MARK = re.compile(r"<mark>(.*?)</mark>", re.S)


@dataclass(frozen=True)
class ParsedQuery:
    """A query as a template over atomic constraints (``constraints[i]`` fills the template's i-th slot)."""

    template: str
    constraints: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.template not in TEMPLATES:
            raise InputError(f"unknown QUEST template '{self.template}'", field="template")
        if len(self.constraints) != arity(self.template):
            raise InputError(f"template '{self.template}' takes {arity(self.template)} constraints, "
                             f"got {len(self.constraints)}", field="constraints")

    @property
    def is_union(self) -> bool:
        return self.template in UNIONS

    @property
    def is_set_operation(self) -> bool:
        """An intersection or a difference: two or more constraints that narrow the set (what setops refines)."""
        return not self.is_union and len(self.constraints) > 1

    @property
    def negated(self) -> tuple[bool, ...]:
        """Per constraint: whether the template subtracts it (the last constraint of a difference)."""
        last = len(self.constraints) - 1
        return tuple(self.template in DIFFERENCES and i == last for i in range(len(self.constraints)))

    @property
    def symbol(self) -> str:
        return SYMBOLS[self.template]


def arity(template: str) -> int:
    """How many constraints a template combines."""
    return template.count("_")


def template_for(constraints: int, union: bool = False, difference: bool = False) -> str:
    """The template with this many constraints (2..3 for unions; 2..3 for differences, the last one negated)."""
    if difference:
        return DIFFERENCE if constraints <= 2 else INTERSECTION_DIFFERENCE
    if constraints <= 1:
        return ATOMIC
    if union:
        return UNION if constraints == 2 else UNION3
    return INTERSECTION if constraints == 2 else INTERSECTION3


def parse_marked(original_query: str, path: object = None, line: int | None = None) -> ParsedQuery:
    """The gold parse of a QUEST ``original_query``: marked spans are the constraints, the rest is the template.
    Errors name the field read, original_query (and the ``path`` and ``line`` it was read from, when given)."""
    constraints = tuple(span.strip() for span in MARK.findall(original_query or ""))
    template = " ".join(MARK.sub("_", original_query or "").split())
    if not constraints:
        raise InputError(f"no <mark> constraints in '{original_query}'", path=path, line=line, field="original_query")
    if template not in TEMPLATES:  # before: blamed a field 'template' and named no file
        raise InputError(f"unknown QUEST template '{template}' (its text outside the <mark> spans); the templates: "
                         f"{', '.join(repr(t) for t in TEMPLATES)}", path=path, line=line, field="original_query")
    return ParsedQuery(template, constraints)
