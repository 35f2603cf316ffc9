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

# The suite runs on TEST_WORKERS pytest-xdist workers (0: in one process), one torch/BLAS thread each, a test file
# per worker (--dist loadfile: module fixtures such as loaded models or a local Ray are made once).
TEST_WORKERS ?= 2
PYTEST := OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

test: lint
	$(PYTEST)

test-fast: $(STAMP)
	$(PYTEST) -m "not slow"

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
