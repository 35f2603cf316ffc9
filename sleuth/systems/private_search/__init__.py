"""Private search (Faggioli & Ferro, *Evaluating Differential Privacy Approaches for Query
Obfuscation in Information Retrieval*, ECIR 2024): DP query obfuscation, non-DP baselines, and a client that only ever sends
obfuscated queries to a remote search engine and reranks the pooled results locally.

The Python equivalent of ``sleuth privacy obfuscate "query" --mechanism vickrey-mahalanobis --epsilon 12.5 -n 20``::

    from sleuth.systems.private_search.registry import make_obfuscator

    obfuscator = make_obfuscator("vickrey-mahalanobis")          # GloVe 6B 50-d, alphabetic words
    queries = obfuscator.obfuscate_one("query", n=20, epsilon=12.5)  # seed=... for reproducible output

and of ``sleuth privacy search``::

    from sleuth.models.registry import load_encoder
    from sleuth.systems.private_search.client import PrivateSearch
    from sleuth.systems.private_search.remote import RemoteEngine
    from sleuth.systems.private_search.rescore import TextRescore

    client = PrivateSearch(obfuscator, RemoteEngine.sleuth("http://127.0.0.1:8000"),
                           TextRescore(load_encoder("minilm")), n=20, epsilon=12.5)
    hits = client.search("query", k=10)
"""

from sleuth.plugins import System

SYSTEM = System(name="privacy", title="Evaluating Differential Privacy Approaches for Query Obfuscation in "
                "Information Retrieval (ECIR 2024)", package=__name__, service="service")
