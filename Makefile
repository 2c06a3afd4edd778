# cairn: `make demo` runs the example pipeline locally; `make test` runs lint, types and tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PYTHONPATH := layers/cairn:functions:.

.PHONY: demo test lint types unit venv clean bench

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m document_intake.demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types: $(STAMP)
	$(BIN)/mypy layers/cairn/cairn functions tests benchmarks

unit: $(STAMP)
	$(BIN)/pytest

test: lint types unit

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis .cairn

bench: $(STAMP)
	$(BIN)/python benchmarks/transition_cost.py
