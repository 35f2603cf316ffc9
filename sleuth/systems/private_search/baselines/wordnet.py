"""WordNet 3.0 through nltk's reader, from local files only (Debian's ``wordnet-base`` or an nltk data folder).

nltk is an optional extra (``pip install 'sleuth[privacy]'``, nltk==3.10.4). Debian's package ships the database
without the ``lexnames`` file nltk's reader expects; sleuth copies the database once into its home folder
(``$SLEUTH_HOME/wordnet``) and writes the standard WordNet 3.0 lexicographer file list there.
"""

from __future__ import annotations

import os
import shutil
from functools import lru_cache
from pathlib import Path

from sleuth.errors import MissingExtraError, SleuthError
from sleuth.paths import home_dir

#: where WordNet 3.0 databases are looked for, after $SLEUTH_WORDNET
SEARCH_PATHS = ("/usr/share/wordnet", "~/nltk_data/corpora/wordnet", "/usr/share/nltk_data/corpora/wordnet")
REQUIRED = ("data.noun", "data.verb", "data.adj", "data.adv", "index.noun", "index.verb", "index.adj", "index.adv")
#: WordNet 3.0's 45 lexicographer files (lexnames(5WN)), as "number name syntactic-category" lines
LEXNAMES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute",
    "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group",
    "noun.location", "noun.motive", "noun.object", "noun.person", "noun.phenomenon", "noun.plant",
    "noun.possession", "noun.process", "noun.quantity", "noun.relation", "noun.shape", "noun.state",
    "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition", "verb.communication",
    "verb.competition", "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl",
)
CATEGORY = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}


def find_wordnet() -> Path:
    """The first folder holding a WordNet 3.0 database ($SLEUTH_WORDNET first); SleuthError when none does."""
    candidates = [os.environ["SLEUTH_WORDNET"]] if os.environ.get("SLEUTH_WORDNET") else []
    candidates += [str(Path(p).expanduser()) for p in SEARCH_PATHS]
    for candidate in candidates:
        if all((Path(candidate) / name).is_file() for name in REQUIRED):
            return Path(candidate)
    raise SleuthError("WordNet 3.0 not found (tried " + ", ".join(candidates) + "): install the Debian package "
                      "wordnet-base or set SLEUTH_WORDNET to a WordNet dict folder")


def prepared_copy(source: Path) -> Path:
    """A folder nltk's reader accepts: ``source`` itself when it has ``lexnames``, else a copy with it added."""
    if (source / "lexnames").is_file():
        return source
    target = home_dir() / "wordnet"
    if not (target / "lexnames").is_file():
        tmp = target.with_name(f".wordnet.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for file in source.iterdir():
            if file.is_file():
                shutil.copyfile(file, tmp / file.name)
        lines = [f"{i:02d}\t{name}\t{CATEGORY[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES)]
        (tmp / "lexnames").write_text("".join(lines), encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    return target


@lru_cache(maxsize=2)
def load_wordnet(path: str | None = None):
    """nltk's WordNetCorpusReader over a local WordNet 3.0 (never downloads)."""
    try:
        import nltk
        from nltk.corpus.reader.wordnet import WordNetCorpusReader
    except ImportError:
        raise MissingExtraError("nltk==3.10.4", "privacy", "the WordNet baselines (AED, FSH)") from None

    class LocalWordNet(WordNetCorpusReader):
        """A plain WordNet 3.0 reader: no mapping to other WordNet versions (that would need a download)."""

        def map_wn(self, version: str = "wordnet"):
            return None

    folder = prepared_copy(Path(path) if path else find_wordnet())
    if str(folder) not in nltk.data.path:
        nltk.data.path.append(str(folder))  # nltk only opens corpus files under its data path
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LocalWordNet(str(folder), None)
