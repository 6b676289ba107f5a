# Two entry points (see README): `make run` and `make test`. Both create .venv on first use.
# `make test-fast` runs the pure and unit layers only (no browser, no server process).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# pytest-xdist workers of the parallel layer (the serial tests always run one at a time).
TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest

.PHONY: run test test-fast lint install install-dev

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

run: $(VENV)/.installed
	$(BIN)/relaydesk serve

# The parallel layer, then the `serial` tests alone (timings, several server processes): the
# second runs even when the first failed, and either failing fails the target.
test: $(VENV)/.installed-dev
	@status=0; \
	$(PYTEST) -n $(TEST_WORKERS) -m "not serial" || status=$$?; \
	$(PYTEST) -m serial || status=$$?; \
	exit $$status

# Pure and unit tests: everything but the whole-app flows, the devtools and `serial`.
test-fast: $(VENV)/.installed-dev
	$(PYTEST) -n $(TEST_WORKERS) -m "not serial" --ignore=tests/flows --ignore=tests/devtools

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/mypy
