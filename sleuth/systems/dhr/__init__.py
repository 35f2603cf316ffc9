"""Dense Hierarchical Retrieval: documents first, then the passages of the top documents (Liu et al., *Dense
Hierarchical Retrieval for Open-Domain Question Answering*, Findings of EMNLP 2021). See README.md here."""

from sleuth.plugins import System

SYSTEM = System(name="dhr", title="Dense Hierarchical Retrieval for Open-Domain Question Answering (EMNLP 2021)",
                package=__name__, updates="updates", shards="sharded")
