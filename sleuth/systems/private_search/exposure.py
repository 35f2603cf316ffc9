"""What an engine saw of a query through its obfuscations: which of the original query's words were sent verbatim,
and in how many of the queries sent (the privacy summary after ``sleuth privacy search`` and in ``/obfuscate``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sleuth.systems.private_search.obfuscator import tokenize


@dataclass(frozen=True)
class Exposure:
    """``sent`` queries reached the engine; ``verbatim[word]``: how many of them held that original word."""

    sent: int
    words: tuple[str, ...]
    verbatim: dict[str, int]

    @classmethod
    def of(cls, original: str, sent: Sequence[str]) -> Exposure:
        """The exposure of ``original`` (its distinct words, in order) through the queries ``sent``."""
        words = tuple(dict.fromkeys(tokenize(original)))
        sent_words = [set(tokenize(text)) for text in sent]
        counts = {word: sum(word in held for held in sent_words) for word in words}
        return cls(len(sent), words, {word: count for word, count in counts.items() if count})

    def line(self) -> str:
        """``engine saw 20 queries; 5 of 6 original words sent verbatim, in 1-7 of them (peer 7, speeds 1, ...)``."""
        head = f"engine saw {self.sent} quer{'y' if self.sent == 1 else 'ies'}; "
        if not self.verbatim:
            return head + f"none of the {len(self.words)} original words sent verbatim"
        counts = sorted(self.verbatim.values())
        span = f"{counts[0]}" if counts[0] == counts[-1] else f"{counts[0]}-{counts[-1]}"
        each = ", ".join(f"{word} {count}" for word, count in sorted(self.verbatim.items(), key=lambda x: -x[1]))
        return (head + f"{len(self.verbatim)} of {len(self.words)} original words sent verbatim, in {span} of them "
                f"({each})")

    def to_dict(self, summary: bool = True) -> dict:
        """The JSON form: queries (to be) sent, original words, words sent verbatim with their counts, and (with
        ``summary``) the line."""
        record = {"queries_sent": self.sent, "original_words": len(self.words),
                  "words_sent_verbatim": len(self.verbatim), "verbatim_counts": dict(self.verbatim)}
        return {**record, "summary": self.line()} if summary else record
