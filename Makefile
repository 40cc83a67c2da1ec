# Every target creates or reuses the project's virtual environment itself.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

NODE_STAMP := node_modules/.installed

.PHONY: demo test lint build bench explore mutants privileges validate wheel clean

# SAM CLI in its own environment (aws-sam-cli pins its own boto3), and the functions' runtime, Python 3.12,
# which `sam build` needs on PATH: pyenv's if there is one, else python3.12's (PY312=/path/to/python3.12).
SAM_VENV  := .venv-sam
SAM       := $(SAM_VENV)/bin/sam
SAM_STAMP := $(SAM_VENV)/.installed
PY312     ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12.*/bin/python3.12) $(shell command -v python3.12))
SAM_ENV   := AWS_DEFAULT_REGION=eu-west-1 SAM_CLI_TELEMETRY=0 PATH="$(dir $(PY312)):$$PATH"
TEMPLATES := template.yaml $(wildcard examples/*/template.yaml)
EXAMPLES  := $(patsubst examples/%/template.yaml,%,$(wildcard examples/*/template.yaml))
# Every file sam build reads: a change to any of them lints and builds again.
BUILD_INPUTS := $(TEMPLATES) $(shell find statemachine functions layers examples -type f -not -path '*/__pycache__/*' -not -path '*/.pytest_cache/*')
BUILD_STAMP  := .aws-sam/.checked
SAM_LINT     := for t in $(TEMPLATES); do $(SAM_ENV) $(SAM) validate --lint -t $$t || exit 1; done

# constraints.txt: each runtime dependency at the lower bound of its range (what the suite tests).
$(STAMP): pyproject.toml constraints.txt
	@echo "Installing idemflow and its dependencies into $(VENV) (first run, or after pyproject.toml or constraints.txt changed)..."
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

# asl-validator (npm) checks the definition against the ASL schema in the tests.
$(NODE_STAMP): package.json package-lock.json
	npm ci --silent --no-audit --no-fund
	touch $(NODE_STAMP)

demo: $(STAMP)
	$(BIN)/idemflow demo

# pytest keeps its assertion-rewritten test modules, and Python the bytecode of what the tests and their
# processes import, in __pycache__/ (git ignores it): with PYTHONDONTWRITEBYTECODE set in the caller's
# environment, every run compiled them all again in each of its processes (CHANGELOG.md, 2026-11-25).
test: $(STAMP) $(NODE_STAMP) $(BUILD_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP) $(NODE_STAMP) $(BUILD_STAMP)
	$(BIN)/python -m bench.run

# The interleaving checker's full tiers (make test runs its quick tier): every order of 2 executions
# with each single event, seeded random orders of 3, slow owners. IDEMFLOW_EXPLORE_SEED=N replays a seed.
explore: $(STAMP)
	$(BIN)/python -m idemflow.explore $(if $(IDEMFLOW_EXPLORE_SEED),--seed $(IDEMFLOW_EXPLORE_SEED))

# Deletes each condition clause, Catch, Retry and Choice rule of the definition in turn and runs the
# fast tests against each mutant; statemachine/mutants-equivalent.json explains the survivors.
mutants: $(STAMP) $(NODE_STAMP)
	$(BIN)/python -m idemflow.mutants --report mutants-report.md

# Deletes each statement, SAM policy template and action of every role template.yaml and examples/*/template.yaml
# write, in turn, and runs the tests that exercise the workflow on the engine (which decides each call under its
# role); statemachine/privileges-explained.json explains the grants no test needs.
privileges: $(STAMP) $(NODE_STAMP)
	$(BIN)/python -m idemflow.mutants.privileges --report privileges-report.md

# The package as a user installs it: dist/idemflow-<version>-py3-none-any.whl (the workflow inside it), for
# `pip install dist/idemflow-*.whl` (docs/contract.md). build/ goes first: setuptools would package what an
# earlier build kept there (a module deleted since) too.
wheel: $(STAMP)
	rm -rf build dist/idemflow-*.whl
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir dist .

$(SAM_STAMP):
	test -x $(SAM) || $(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet --disable-pip-version-check aws-sam-cli==1.170.0
	touch $(SAM_STAMP)

# `sam validate --lint` and `sam build` of template.yaml and every example, then each built function's size
# (under 1 MB: Powertools comes from a layer, boto3 from the runtime). make test runs it when an input
# changed since the last pass; the build output (.aws-sam/) stays out of git.
$(BUILD_STAMP): $(SAM_STAMP) $(STAMP) $(BUILD_INPUTS)
	@test -n "$(PY312)" || (echo "sam build needs python3.12 (the functions' runtime) on PATH, or PY312=/path/to/python3.12" && exit 1)
	$(SAM_LINT)
	@mkdir -p .aws-sam
	$(SAM_ENV) $(SAM) build --template template.yaml --build-dir .aws-sam/build >.aws-sam/build.log 2>&1 \
		|| (cat .aws-sam/build.log && exit 1)
	for d in $(EXAMPLES); do (cd examples/$$d && $(SAM_ENV) $(CURDIR)/$(SAM) build \
		--build-dir $(CURDIR)/.aws-sam/build-$$d >$(CURDIR)/.aws-sam/build-$$d.log 2>&1) \
		|| (cat .aws-sam/build-$$d.log && exit 1); done
	$(BIN)/python -m bench.sizes .aws-sam/build $(EXAMPLES:%=.aws-sam/build-%)
	touch $(BUILD_STAMP)

build: $(BUILD_STAMP)

# The real `sam validate --lint` alone.
validate: $(SAM_STAMP)
	$(SAM_LINT)

clean:
	rm -rf $(VENV) $(SAM_VENV) .aws-sam node_modules build dist .pytest_cache .mypy_cache .ruff_cache
