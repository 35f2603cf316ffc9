"""QUEST: set-seeking entity queries with implicit set operations, answered by a retriever plus a relevance
classifier (Malaviya et al., *QUEST: A Retrieval Dataset of Entity-Seeking Queries with Implicit Set Operations*,
ACL 2023): templates, the query parser, fuzzy set operations, the classifier and its training, set metrics and the
dataset construction tool. See README.md here."""

from sleuth.plugins import System

SYSTEM = System(name="quest", title="QUEST: A Retrieval Dataset of Entity-Seeking Queries with Implicit Set "
                "Operations (ACL 2023)", package=__name__, service="service")
