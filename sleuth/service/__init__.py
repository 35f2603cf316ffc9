"""sleuth's HTTP search service (minimal for now: /search, /health and a query log)."""
