# Every target creates or reuses the project's virtual environment itself.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

NODE_STAMP := node_modules/.installed

.PHONY: demo test lint bench validate clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# asl-validator (npm) checks the definition against the ASL schema in the tests.
$(NODE_STAMP): package.json package-lock.json
	npm ci --silent --no-audit --no-fund
	touch $(NODE_STAMP)

demo: $(STAMP)
	$(BIN)/idemflow demo

test: $(STAMP) $(NODE_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench.run

# The real `sam validate --lint`, in its own environment (aws-sam-cli pins its own boto3).
validate:
	test -x .venv-sam/bin/sam || ($(PYTHON) -m venv .venv-sam && .venv-sam/bin/pip install --quiet aws-sam-cli==1.170.0)
	AWS_DEFAULT_REGION=eu-west-1 .venv-sam/bin/sam validate --lint

clean:
	rm -rf $(VENV) .venv-sam node_modules .pytest_cache .mypy_cache .ruff_cache
