"""A rule-based parser of plain QUEST queries into a template and atomic constraints.

At inference only the paraphrased ``query`` is available, so the parser reads surface cues, in this order:

1. difference: a negation cue ("but not", "that are not", "aren't", "excluding", "non-X ...") splits the query into
   a positive part and a negated constraint;
2. union: " or " (and comma lists "A, B, or C") splits the positive part;
3. intersection: "that are (also) (both)", "which are", " and " and comma lists split it.

A constraint left without a head noun ("Flora of Morelos or of Tlaxcala") borrows one from its neighbour ("Flora of
Tlaxcala"). Intersections that are only implied by modifiers ("1974 books about the American Revolution") are not
split. The rules were written by reading ``original_query`` (which marks the constraints) on the train split;
:func:`sleuth.systems.quest.parser_eval.parser_accuracy` measures them against it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sleuth.systems.quest.templates import ParsedQuery, template_for

# Plural (and a few singular) head nouns of the four QUEST domains; a constraint without one borrows a head.
HEADS = frozenset("""
films film movies movie documentaries documentary comedies dramas thrillers westerns musicals cartoons anime
novels novel books book novellas works literature fiction stories collections memoirs biographies essays plays
poems poetry comics manga series autobiographies anthologies
plants plant flora trees tree shrubs orchids ferns grasses crops vines succulents cacti herbs mosses lichens fungi
flowers bryophyta genera genus species cultivars palms conifers lilies weeds
fauna animals animal birds bird mammals fish fishes reptiles amphibians insects moths butterflies bats rodents
snakes frogs lizards turtles spiders arthropods crustaceans invertebrates molluscs mollusks beetles whales
dinosaurs sharks primates carnivorans ungulates pinnipeds cetaceans songbirds shorebirds seabirds parrots owls
ants bees wasps flies lepidoptera rays eels salamanders toads marsupials deer antelopes cats dogs
""".split())
PREPOSITIONS = frozenset("of from in about by on set shot based found native endemic written published located "
                         "filmed made produced directed featuring with for during at".split())
LEADING_FILLER = re.compile(r"^(?:what|which)\s+(?:are|were|is)\s+(?:some\s+|the\s+|all\s+)?|^(?:find|list|show)"
                            r"\s+(?:me\s+)?(?:some\s+|all\s+)?(?:the\s+)?", re.I)
NEGATION = re.compile(
    r",?\s+(?:but|and|yet)\s+(?:are\s+|is\s+|were\s+)?not\s+(?:also\s+)?"
    r"|,?\s+(?:that|which|who)\s+(?:are|is|were|was|do|does|did|can|could)\s*(?:not|n't)\s+(?:also\s+)?"
    r"|,?\s+(?:that|which|who)\s+(?:aren't|isn't|weren't|wasn't|don't|doesn't|didn't|can't|cannot|won't)\s+"
    r"|\s+(?:aren't|isn't|weren't|wasn't|don't|doesn't|didn't|can't|cannot)\s+"
    r"|,?\s+(?:excluding|except(?:\s+for)?|other\s+than|not)\s+", re.I)
NON_PREFIX = re.compile(r"^non[- ](?!fiction\b)(\S+)\s+", re.I)
UNION_SPLIT = re.compile(r"\s*,?\s+or\s+(?:either\s+)?|\s*,\s*or\s+", re.I)
INTERSECTION_CUE = re.compile(r"\s+(?:that|which|who)\s+(?:are|is|were|was)\s+(?:also\s+)?(?:both\s+)?"
                              r"|\s+that\s+are\s+also\s+", re.I)
AND_SPLIT = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+(?:also\s+)?(?:both\s+)?", re.I)
YEAR = re.compile(r"^\d{3,4}(?:'?s)?$")
BE_VERB = re.compile(r"^(?:be\s+|are\s+|is\s+)?(?:also\s+)?", re.I)


@dataclass(frozen=True)
class ParserOptions:
    """Switches of the rules: ``split_and`` splits conjunctions on " and " / commas outside cue phrases (place
    names such as "Trinidad and Tobago" make this a trade-off), ``split_modifiers`` splits an implied intersection
    at the head noun ("1979 comedy films about the arts" -> "1979 comedy films", "films about the arts"; a leading
    year becomes its own constraint), ``max_constraints`` caps the split (QUEST: 3)."""

    split_and: bool = True
    split_modifiers: bool = True
    max_constraints: int = 3


def parse_query(text: str, options: ParserOptions = ParserOptions()) -> ParsedQuery:
    """Parse a plain query into one of the seven templates and its constraints (see the module docstring)."""
    clean = normalise(text)
    positive, negated = split_negation(clean)
    if negated is not None:
        parts = split_intersection(positive, options)[:2] if positive else [clean]
        parts = merge_extra(parts, 2)
        negative = complete_head(negated, parts[0])
        return ParsedQuery(template_for(len(parts) + 1, difference=True), tuple(parts) + (negative,))
    union = split_union(clean)
    if len(union) > 1:
        parts = merge_extra(distribute_heads(union), options.max_constraints)
        return ParsedQuery(template_for(len(parts), union=True), tuple(parts))
    parts = merge_extra(split_intersection(clean, options), options.max_constraints)
    return ParsedQuery(template_for(len(parts)), tuple(parts))


def normalise(text: str) -> str:
    """Collapse spaces, drop a leading "what are (some)" / "find" and trailing punctuation."""
    text = " ".join(text.split())
    text = LEADING_FILLER.sub("", text)
    return text.strip(" ?.!;:")


def split_negation(text: str) -> tuple[str, str | None]:
    """``(positive part, negated constraint or None)`` at the first negation cue; "non-X Y" -> ("Y", "X Y-head")."""
    non = NON_PREFIX.match(text)
    if non:
        rest = text[non.end():]
        return rest, complete_head(non.group(1), rest, prefer_modifier=True)
    match = NEGATION.search(text)
    if match is None or match.start() == 0:
        return text, None
    negated = BE_VERB.sub("", text[match.end():]).strip(" ,")
    return text[:match.start()].strip(" ,"), (negated or None)


def split_union(text: str) -> list[str]:
    """Disjuncts of ``text``: "A or B", "A, B or C", "A, B, or C", "either A or B"."""
    text = re.sub(r"^(?:(.*?)\s+)?(?:that\s+are\s+)?either\s+", lambda m: f"{m.group(1) or ''} ", text,
                  flags=re.I).strip()
    parts = [p.strip(" ,") for p in UNION_SPLIT.split(text) if p.strip(" ,")]
    if len(parts) == 2 and "," in parts[0]:
        head, _, last = parts[0].rpartition(",")
        if head.strip() and last.strip():
            parts = [head.strip(" ,"), last.strip(" ,"), parts[1]]
    return parts


def split_intersection(text: str, options: ParserOptions = ParserOptions()) -> list[str]:
    """Conjuncts of ``text``: "X that are (also) (both) Y and Z", "X and Y", "X, Y and Z" (heads completed)."""
    pieces = [p.strip(" ,") for p in INTERSECTION_CUE.split(text, maxsplit=1) if p.strip(" ,")]
    parts: list[str] = []
    for piece in pieces:
        parts.extend(p.strip(" ,") for p in AND_SPLIT.split(piece) if p.strip(" ,")) if options.split_and \
            else parts.append(piece)
    parts = distribute_heads(parts) if len(parts) > 1 else [text]
    if options.split_modifiers:
        for i in range(len(parts) - 1, -1, -1):
            if len(parts) < options.max_constraints:
                parts[i:i + 1] = split_modifiers(parts[i])
    return parts


def split_modifiers(text: str) -> list[str]:
    """An implied intersection split at the head noun: leading modifiers and a trailing prepositional phrase
    become two constraints; else a leading year with further modifiers becomes its own ("2000s sports films" ->
    "2000s films", "sports films"); else ``[text]``."""
    words = text.split()
    head = head_index(words)
    if head is None:
        return [text]
    modifiers, rest = words[:head], words[head + 1:]
    if modifiers and rest and rest[0].lower() in PREPOSITIONS:
        return [" ".join(words[:head + 1]), " ".join([words[head]] + rest)]
    if len(modifiers) >= 2 and YEAR.match(modifiers[0]):
        return [f"{modifiers[0]} {words[head]}", " ".join(modifiers[1:] + [words[head]] + rest)]
    return [text]


def head_index(words: list[str]) -> int | None:
    """Position of the head noun: the last head word before the first preposition that follows one."""
    found = None
    for i, word in enumerate(words):
        if word.strip(",.'’()").lower() in HEADS:
            found = i
        elif found is not None and word.lower() in PREPOSITIONS:
            break
    return found


def merge_extra(parts: list[str], limit: int) -> list[str]:
    """At most ``limit`` parts: the surplus is joined back onto the last kept part."""
    if len(parts) <= limit:
        return parts
    return parts[:limit - 1] + [" and ".join(parts[limit - 1:])]


def has_head(text: str) -> bool:
    """Whether a constraint names what it is about (a head noun such as films, novels, flora, birds)."""
    return any(word.strip(",.'’()").lower() in HEADS for word in text.split())


def distribute_heads(parts: list[str]) -> list[str]:
    """Give every headless part a head borrowed from a neighbour: the next one for a leading modifier
    ("Cisuralian" + "animals of North America"), else the previous one ("Flora of" + "Tlaxcala")."""
    done = list(parts)
    for i, part in enumerate(parts):
        if has_head(part):
            continue
        if i == 0:
            donor = next((p for p in parts[1:] if has_head(p)), None)
            if donor is not None:
                done[i] = f"{part} {strip_leading_modifiers(donor)}"
        else:
            donor = next((p for p in reversed(done[:i]) if has_head(p)), None)
            if donor is not None:
                done[i] = complete_head(part, donor)
    return done


def strip_leading_modifiers(text: str) -> str:
    """``text`` from its first lowercase word or head noun on: "Swiss war films" -> "war films"."""
    words = text.split()
    for i, word in enumerate(words):
        if word.lower() in HEADS or (word[:1].islower() and not word[:1].isdigit()):
            return " ".join(words[i:])
    return words[-1] if words else text


def head_word(text: str) -> str | None:
    """The head noun of ``text`` as written (see :func:`head_index`), or None."""
    words = text.split()
    at = head_index(words)
    return None if at is None else words[at].strip(",.")


def complete_head(part: str, donor: str, prefer_modifier: bool = False) -> str:
    """``part`` with a head from ``donor`` when it has none: "of Tlaxcala" -> "Flora of Tlaxcala", "Thailand" ->
    "Orchids of Thailand" (donor "Orchids of Indonesia"), "American horror" -> "American horror films"."""
    if has_head(part):
        return part
    head = head_word(donor)
    if head is None:
        return part
    first = part.split()[0].lower() if part.split() else ""
    if first in PREPOSITIONS:
        before_preposition = donor_until_preposition(donor)
        return f"{before_preposition or head} {part}"
    words = donor.split()
    head_at = head_index(words) or 0
    tail = words[head_at + 1:]
    preposition_at = next((i for i in range(len(tail) - 1, -1, -1) if tail[i].lower() in PREPOSITIONS), None)
    proper = all(w[:1].isupper() or w[:1].isdigit() or w.lower() in {"the", "and", "of"} for w in part.split())
    if not prefer_modifier and preposition_at is not None:
        donor_object = " ".join(tail[preposition_at + 1:])
        object_is_proper = donor_object[:1].isupper() or donor_object[:1].isdigit()
        if proper == object_is_proper:  # same kind of thing as the donor's object: a place, a person, a topic
            return " ".join(words[:head_at + 1 + preposition_at + 1] + [part])
    return f"{part} {head.lower() if part[:1].isupper() else head}"


def donor_until_preposition(donor: str) -> str:
    """The donor up to (not including) its first preposition after the head: "Children's books from Ireland" ->
    "Children's books"."""
    words = donor.split()
    start = head_index(words) or 0
    for i in range(start + 1, len(words)):
        if words[i].lower() in PREPOSITIONS:
            return " ".join(words[:i])
    return " ".join(words)
