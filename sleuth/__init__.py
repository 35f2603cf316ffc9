"""sleuth: hard retrieval (hierarchical, multi-hop, set-seeking, private) on one pipeline core."""

__version__ = "0.1.0"
