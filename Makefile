# sleuth: two commands on a fresh machine -- `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo lint test test-fast bench clean

setup: $(STAMP)

# torch==2.13.0 is pinned in the lock file; pip takes the local CPU wheel (an unpinned torch pulls a CUDA build).
$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/sleuth demo

lint: $(STAMP)
	$(BIN)/ruff check sleuth tests bench
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
