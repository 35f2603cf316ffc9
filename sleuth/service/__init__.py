"""sleuth's HTTP search service: ``create_app`` (app.py) assembles FastAPI routers for search, operations (health,
readiness, metrics, pipelines), admin (reload, document updates) and the web page, plus each registered system's
endpoints; the logic lives in small framework-free modules (served pipelines, searcher, document updates, limits,
response shaping, host allow-list)."""
