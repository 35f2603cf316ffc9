"""QUEST set-seeking retrieval (paper 003): templates, the query parser, fuzzy set operations and the
dataset construction tool."""
