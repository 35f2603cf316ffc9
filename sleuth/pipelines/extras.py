"""Declared extras keys: what a stage may put in ``Hit.extras`` beside the score, with its type and display rule.

The core declares the mechanism and its own keys; each system registers the keys its stages write (in the module
that registers its stages), so the CLI renderer, the service and the web page read the registry instead of naming
system keys. A key nobody declared is still allowed and shown as a chip when it is a number or a string.

Display rules:

- ``chip``: a number or short text shown beside the hit (the default);
- ``evidence_path``: a list of hop Hits, drawn as a path ("title1 -> title2") with each hop's scores;
- ``hop_score``: a score shown for each hop of an evidence path, in registration order;
- ``hop_label``: text shown for a hop of an evidence path (e.g. the mention that linked it);
- ``per_query``: the same for every hit of a query: the service lifts it out of the hits into the response;
- ``count_of_per_query``: how many items of the query's ``per_query`` list found the hit (the page: "found by 3 of
  20 sent queries");
- ``hidden``: kept in JSON, not shown on the page.

A name with ``{stage}`` declares a family of keys, one per stage name: the core's ``{stage}_input_score`` is the
score a hit had before the stage called ``<stage>`` rescored it (``sleuth.stages.hits.input_score_key``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sleuth.errors import ConfigError
from sleuth.stages.hits import INPUT_SCORE

DISPLAYS = ("chip", "evidence_path", "hop_score", "hop_label", "per_query", "count_of_per_query", "hidden")


@dataclass(frozen=True)
class ExtraKey:
    """One declared extras key: its name, the type of its value, how it is shown, and one line for people."""

    name: str
    type: type | tuple[type, ...]
    display: str
    description: str


EXTRAS: dict[str, ExtraKey] = {}


def register_extra(name: str, type: type | tuple[type, ...], display: str, description: str) -> ExtraKey:
    """Declare an extras key (declaring the same key twice alike is fine; differently, a ConfigError)."""
    if display not in DISPLAYS:
        raise ConfigError(f"extras key '{name}': unknown display '{display}' (known: {', '.join(DISPLAYS)})")
    key = ExtraKey(name, type, display, description)
    if EXTRAS.get(name, key) != key:
        raise ConfigError(f"extras key '{name}' is declared twice, differently")
    EXTRAS[name] = key
    return key


def declared() -> dict[str, ExtraKey]:
    """Every declared key: the core's and those of every registered system's stage modules."""
    from sleuth.pipelines.registry import load_stage_modules

    load_stage_modules()
    return dict(EXTRAS)


def key_for(name: str) -> ExtraKey | None:
    """The declaration of an extras key: its own, or that of the ``{stage}`` family it belongs to (None: undeclared)."""
    keys = declared()
    if name in keys:
        return keys[name]
    return next((key for pattern, key in keys.items() if "{stage}" in pattern
                 and re.fullmatch(re.escape(pattern).replace(r"\{stage\}", ".+"), name)), None)


def keys_shown_as(display: str) -> list[str]:
    """The names of the declared keys with this display rule, in declaration order."""
    return [key.name for key in declared().values() if key.display == display]


def page_hidden() -> list[str]:
    """The keys the web page does not show as chips (every display rule but ``chip``)."""
    return [key.name for key in declared().values() if key.display != "chip"]


register_extra("components", dict, "hidden", "fusion: each branch's score of the hit (None where it missed it)")
register_extra(INPUT_SCORE, float, "chip", "the hit's score before the stage named <stage> rescored it")
register_extra("passage", str, "chip", "max_passage: the id of the document's best passage, whose score it has")
