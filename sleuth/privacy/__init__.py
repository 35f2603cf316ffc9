"""Private search (paper 001): DP query obfuscation, non-DP baselines, and a client that only ever sends
obfuscated queries to a remote search engine and reranks the pooled results locally.

The Python equivalent of ``sleuth obfuscate "query" --mechanism vickrey-mahalanobis --epsilon 12.5 -n 20``::

    from sleuth.privacy.registry import make_obfuscator

    obfuscator = make_obfuscator("vickrey-mahalanobis")          # GloVe 6B 50-d, alphabetic words
    queries = obfuscator.obfuscate_one("query", n=20, epsilon=12.5)  # seed=... for reproducible output

and of ``sleuth private-search``::

    from sleuth.models.registry import load_encoder
    from sleuth.privacy.client import PrivateSearch
    from sleuth.privacy.remote import RemoteEngine
    from sleuth.privacy.rescore import TextRescore

    client = PrivateSearch(obfuscator, RemoteEngine.sleuth("http://127.0.0.1:8000"),
                           TextRescore(load_encoder("minilm")), n=20, epsilon=12.5)
    hits = client.search("query", k=10)
"""
