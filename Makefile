# cairn: `make demo` runs the example pipeline on the local stack (`make dev` serves it); `make test` runs lint, types, the template
# checks and the tests. `make validate`, `make build` and `make deploy` work on template.yaml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The SAM CLI pins its own boto3, so it lives in a virtualenv of its own.
SAM_VENV := .venv-sam
SAM := $(SAM_VENV)/bin/sam
SAM_STAMP := $(SAM_VENV)/.installed
# checkov (the template's security checks) pins an older boto3 and networkx: a virtualenv of its own too.
CHECKOV_VENV := .venv-checkov
CHECKOV := $(CHECKOV_VENV)/bin/checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
NODE_STAMP := node_modules/.installed
# Each virtualenv's packages are compiled to bytecode once, after pip (side by side: compileall -j 0): the suites
# start hundreds of Python processes (cairn dev and its workers, the CLI, the SAM CLI), and where the environment
# keeps no bytecode (PYTHONDONTWRITEBYTECODE) each would compile boto3, botocore, moto and pydantic again: a third
# more CPU in tests/template/test_handwritten_template.py, measured. A file that does not compile is left to Python.
PIP_INSTALL = pip install --quiet --disable-pip-version-check --no-compile
COMPILE = -m compileall -qq -j 0
# The browser tests (tests/browser) run Debian's chromium through Playwright, never a browser of Playwright's own.
CHROMIUM := /usr/bin/chromium
STATELINT := node_modules/.bin/statelint
TEMPLATE := template.yaml
STATE_MACHINE := statemachine/pipeline.asl.json
BUILD_DIR := .aws-sam/build
export PYTHONPATH := layers/cairn:functions:.
export SAM_CLI_TELEMETRY := 0

.PHONY: tools dist actionlint demo dev docs test test-long checks lint types unit validate build deploy venv clean bench proof history-proof bulk-proof cost-order-proof reliability new scaffold-check bundle-check chromium screenshots skeleton scale console-scale coverage

venv: $(STAMP)

# Everything both tiers use: the virtualenvs, statelint, Debian's chromium. `make -j4 tools` installs them side by side
# (about a minute instead of three); `make test` and `make test-long` install what they need one after another.
tools: $(STAMP) $(SAM_STAMP) $(CHECKOV_STAMP) $(NODE_STAMP) $(CHROMIUM)

# cairn itself is installed editable (its `cairn` command, its pytest plugin), with the pins of requirements-dev.txt.
# A virtualenv made before the distribution was named cairn-lambda loses the former `cairn` first (both would
# install the same package and command).
$(STAMP): requirements.txt requirements-dev.txt layers/requirements.txt layers/cairn/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	-$(BIN)/pip uninstall --quiet --yes --disable-pip-version-check cairn 2>/dev/null
	$(BIN)/$(PIP_INSTALL) -r requirements-dev.txt -e "./layers/cairn[dev]"
	-$(BIN)/python $(COMPILE) $(VENV)/lib
	touch $(STAMP)

$(SAM_STAMP): requirements-sam.txt
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/$(PIP_INSTALL) -r requirements-sam.txt
	-$(SAM_VENV)/bin/python $(COMPILE) $(SAM_VENV)/lib
	touch $(SAM_STAMP)

$(CHECKOV_STAMP): requirements-checkov.txt
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/$(PIP_INSTALL) -r requirements-checkov.txt
	-$(CHECKOV_VENV)/bin/python $(COMPILE) $(CHECKOV_VENV)/lib
	touch $(CHECKOV_STAMP)

$(NODE_STAMP): package.json package-lock.json
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { \
		echo "make validate needs Node.js and npm (for statelint, pinned in package.json)." >&2; \
		echo "Install them first, e.g. 'apt-get install nodejs npm', then run make again." >&2; \
		exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

# Debian's chromium for the browser tests, installed once (as root, else with sudo) when it is missing.
chromium: $(CHROMIUM)

$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; \
	else echo "The browser tests need Debian's chromium ($(CHROMIUM)); install it as root:" \
		"apt-get install -y --no-install-recommends chromium" >&2; exit 1; fi; \
	echo "Installing Debian's chromium for the browser tests (apt-get install chromium)"; \
	{ $$sudo apt-get update -qq && \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } || { \
		echo "Could not install chromium: run 'apt-get install -y --no-install-recommends chromium' as root," \
			"then make test again." >&2; exit 1; }; \
	test -x $(CHROMIUM) || { echo "apt-get installed chromium, but $(CHROMIUM) is not there" >&2; exit 1; }

# Regenerates the dashboard's screenshots in docs/screenshots (cairn dev on free ports, Debian's chromium).
screenshots: $(STAMP) $(CHROMIUM)
	$(BIN)/python -m tests.browser.screenshots --out docs/screenshots

# The demo runs on the local stack: `cairn dev` on free ports, jobs over its HTTP API, a real worker kill.
demo: $(STAMP)
	$(BIN)/python -m document_intake.stack_demo

# The template's stack on 127.0.0.1 (PORT, default 3000; DRIVER=direct|stepfunctions): Ctrl-C stops it.
PORT ?= 3000
DRIVER ?= direct
dev: $(STAMP)
	$(BIN)/python -m cairn dev --port $(PORT) --driver $(DRIVER)

# The release's distributions of layers/cairn (sdist and wheel) in dist/, checked as the release workflow checks them.
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --no-isolation --outdir dist layers/cairn
	$(BIN)/twine check --strict dist/*

# actionlint for .github/workflows (tests/unit/test_release_workflow.py): an sdist whose build fetches the binary from
# GitHub, so it is not among the dev tools (requirements-actionlint.txt says why).
actionlint: $(STAMP)
	$(BIN)/$(PIP_INSTALL) -r requirements-actionlint.txt

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types: $(STAMP)
	$(BIN)/mypy layers/cairn/cairn functions tests benchmarks docs_hooks.py

# The documentation site: docs/ into site/ (open site/index.html), offline and strict: a broken link, a page left out
# of the nav or a name the Python reference cannot find fails the build. The reference pages are generated from the
# code (docs_hooks.py): the CLI's parser, the API's OpenAPI document, template.yaml, cairn.core.settings, cairn.__all__.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --clean --site-dir site

unit: $(STAMP)
	$(BIN)/pytest

# `cairn template check` (the template's phase functions, log groups, alarms and invoke grants agree with
# functions/pipelines.py; `cairn template sync` fixes what it reports), then sam validate --lint and cfn-lint
# on the template; cfn-lint on the state machine as deployed (its ${...} substitutions filled, wrapped in an
# AWS::StepFunctions::StateMachine); statelint on the ASL; checkov on the template as SAM deploys it.
# checkov reads AWS::Serverless::* only in part (not the roles SAM makes for functions and the state machine, nor
# their inline policies, the invoke permissions or the API's stage; an Fn::If reads as set), so it scans the
# template as CloudFormation receives it (after AWS::LanguageExtensions and the SAM transform), once with the
# parameters' defaults and once with every option on: tests/template/test_checkov.py writes both. That finds all
# the SAM template would and more; a finding names the transformed template's logical id (template.yaml's, or one
# SAM derives from it: ApiFunctionRole, HttpApiApiGatewayDefaultStage). Offline: --skip-download, no API key, no
# PyPI version check. The checks it skips are in .checkov.yaml, each with its reason, and in docs/CHECKOV.md.
validate: $(STAMP) $(SAM_STAMP) $(NODE_STAMP) $(CHECKOV_STAMP)
	$(BIN)/python -m cairn template check --template $(TEMPLATE)
	$(SAM) validate --lint --template $(TEMPLATE)
	$(BIN)/cfn-lint --include-checks I -- $(TEMPLATE)
	@wrapper=$$(mktemp -d) && trap 'rm -rf "$$wrapper"' EXIT && \
		$(BIN)/python -m tests.template.asl "$$wrapper/pipeline-state-machine.json" && \
		echo "cfn-lint $(STATE_MACHINE) (as deployed)" && \
		$(BIN)/cfn-lint --include-checks I -- "$$wrapper/pipeline-state-machine.json"
	$(STATELINT) $(STATE_MACHINE)
	@scan=$$(mktemp -d) && trap 'rm -rf "$$scan"' EXIT && \
		$(BIN)/python -m tests.template.test_checkov "$$scan" && \
		echo "checkov $(TEMPLATE) (as SAM deploys it: the defaults, every option)" && \
		env -u BC_API_KEY CKV_SKIP_PACKAGE_UPDATE_CHECK=true $(CHECKOV) --config-file .checkov.yaml \
			--framework cloudformation --skip-download --compact --quiet --directory "$$scan"

# Plain `sam build` and `sam deploy` with samconfig.toml's settings: the layer is built by layers/Makefile, for the
# template's Architecture (samconfig.toml saves it for both). `make deploy` is `sam build && sam deploy`.
build: $(SAM_STAMP)
	$(SAM) build

deploy: build
	$(SAM) deploy

# The suite has two tiers (docs/contributing.md has the budget and how to check it), both in CI (.ci/run):
# - `make test`: ruff, mypy, the docs site and `validate` (run side by side, each one's output kept together), then
#   the fast tier: the engine, the stores' contract on memory with a slice of it on DynamoDB, the API, the CLI, the
#   template. At most 8 minutes on 2 cores once the virtualenvs are installed.
# - `make test-long`: the long proofs: every store's contract and fault schedules in full, the dashboard in Debian's
#   chromium, `cairn dev` processes, the chaos run, and the e2e tests (a user's whole path: a fresh virtualenv with the
#   checkout's cairn, cairn init, plain sam build for each architecture, the built artifacts running jobs; a build and
#   one job on each other runtime whose Python the machine has).
# tests/conftest.py sorts a test into its tier. The template tests need the tools `validate` installs, the browser tests
# Debian's chromium: with TEMPLATE_TOOLS_REQUIRED and BROWSER_REQUIRED they fail instead of skipping when one is
# missing. The suite runs on TEST_WORKERS processes (pytest-xdist); TEST_WORKERS=0 runs it in one.
TEST_WORKERS ?= 2
PYTEST_RUN := $(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup --durations=15
CHECK_JOBS ?= 2
test: $(STAMP) $(SAM_STAMP) $(CHECKOV_STAMP) $(NODE_STAMP)
	$(MAKE) --no-print-directory -j $(CHECK_JOBS) --output-sync=target checks
	TEMPLATE_TOOLS_REQUIRED=1 ACTIONLINT_REQUIRED=1 $(PYTEST_RUN) -m "not long and not e2e"

checks: lint types docs validate

test-long: $(STAMP) $(SAM_STAMP) $(NODE_STAMP) $(CHROMIUM)
	TEMPLATE_TOOLS_REQUIRED=1 BROWSER_REQUIRED=1 $(PYTEST_RUN) -m "long or e2e"

# The e2e tests alone (make test-long runs them too).
bundle-check: $(STAMP) $(SAM_STAMP)
	TEMPLATE_TOOLS_REQUIRED=1 $(PYTEST_RUN) -m e2e

# Line and branch coverage of the library, by package, over the fast tier (in the test processes; pyproject.toml's
# [tool.coverage.run]). Fails below COVERAGE_FLOOR percent of lines (91.1% measured on 2026-12-06).
COVERAGE_FLOOR ?= 90
coverage: $(STAMP) $(SAM_STAMP) $(NODE_STAMP)
	rm -f .coverage .coverage.*
	TEMPLATE_TOOLS_REQUIRED=1 $(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup -q \
		-m "not long and not e2e" --cov --cov-report=
	$(BIN)/python -m tests.coverage_report --floor $(COVERAGE_FLOOR)

# The fault-schedule property test (tests/contract/test_fault_schedules.py) at PROOF_SCALE times the size
# `make test` runs: more sampled pairs of faults and hypothesis examples per storage (about 10 minutes).
PROOF_SCALE ?= 10
proof: $(STAMP)
	CAIRN_PROOF_SCALE=$(PROOF_SCALE) $(BIN)/pytest tests/contract/test_fault_schedules.py

# The Step Functions driver's history limits at full size (tests/functional/test_execution_history.py with the shipped
# limits): a job of 2,000 transitions handed on from execution to execution and a map of 5,000 items in rounds on
# moto's engine, each history's events counted (about 20 minutes). `make test-long` runs them with small limits.
history-proof: $(STAMP)
	CAIRN_HISTORY_PROOF=1 $(BIN)/pytest -p no:xdist -s tests/functional/test_execution_history.py

# A bulk operation of 10,000 jobs, the most one takes (tests/functional/test_bulk_ten_thousand.py at full size: about
# 11 minutes); `make test-long` runs it with 1,000.
bulk-proof: $(STAMP)
	CAIRN_BULK_PROOF=1 $(BIN)/pytest -p no:xdist tests/functional/test_bulk_ten_thousand.py

# What a page dearest first reads on 10,000 jobs (tests/functional/test_cost_order_read_units.py at full size: the
# figures of docs/SCALE.md); `make test-long` runs it on 2,000.
cost-order-proof: $(STAMP)
	CAIRN_COST_ORDER_PROOF=1 $(BIN)/pytest -p no:xdist -s tests/functional/test_cost_order_read_units.py

# The load test behind docs/SCALE.md: SCALE_JOBS jobs on moto (10,000 take about half an hour; moto runs under
# cairn/dev/moto_speedups.py, so its time per request does not grow with the table), then the scale model written
# again from the figures it measured.
SCALE_JOBS ?= 10000
scale: $(STAMP)
	$(BIN)/python -m benchmarks.scale --jobs $(SCALE_JOBS)

# The dashboard's jobs list on `cairn dev` with CONSOLE_JOBS jobs of real histories (benchmarks/dev_scale.py's, written
# through the store; 10,000 take a few minutes) and a map job of 300 pages run to its end with the sweep once a day:
# the browser tests of tests/browser/test_dashboard_list.py, printing how soon the first page shows, then the API's
# answers beside a 100-job stack. `make test-long` runs the tests with 300 jobs and a map of 12.
CONSOLE_JOBS ?= 10000
console-scale: $(STAMP) $(CHROMIUM)
	CAIRN_CONSOLE_JOBS=$(CONSOLE_JOBS) BROWSER_REQUIRED=1 $(BIN)/pytest -s -p no:randomly tests/browser/test_dashboard_list.py
	$(BIN)/python -m benchmarks.dev_scale --jobs $(CONSOLE_JOBS)

# Runs the proofs (fault schedules at RELIABILITY_SCALE, API fuzzing, corrupt records, a chaos run of
# RELIABILITY_JOBS jobs with a fifth of AWS calls failing) and writes docs/RELIABILITY.md.
RELIABILITY_SCALE ?= 3
RELIABILITY_JOBS ?= 100
reliability: $(STAMP)
	$(BIN)/python -m tests.reliability.report --scale $(RELIABILITY_SCALE) --jobs $(RELIABILITY_JOBS)

# `cairn init` ships copies of this repository's layer build, entry points, samconfig and template (without its
# pipelines): `make skeleton` writes them again after one changed (tests/bundle/test_skeleton.py says when).
skeleton: $(STAMP)
	$(BIN)/python -m tests.bundle.skeleton

# `make new NAME=demo-two` runs `cairn new demo-two` here (the library from layers/cairn, nothing to install).
new: $(STAMP)
	@test -n "$(NAME)" || { echo "usage: make new NAME=<pipeline name>, e.g. make new NAME=demo-two" >&2; exit 2; }
	$(BIN)/python -m cairn new "$(NAME)"

# What a new user does, in a fresh clone of this repository's HEAD (in a temporary folder, removed after): `cairn new
# demo-two`, then what it can change: ruff on the tree and mypy --strict on the files it wrote, `make validate` (the template
# checks, checkov included), the tests that enumerate the bundle's registry, template or events (`-m bundle`:
# tests/conftest.py finds them) and the new pipeline's own tests, untouched. The checks (one process at a time) run
# beside the tests, their output shown after the tests'. The clone uses this checkout's virtualenvs and node_modules
# through symlinks and a copy of its mypy cache, and `-o` tells make they are up to date: nothing is reinstalled. Only
# committed work is in the clone.
scaffold-check: $(STAMP) $(SAM_STAMP) $(CHECKOV_STAMP) $(NODE_STAMP)
	@clone=$$(mktemp -d) && trap 'rm -rf "$$clone"' EXIT && \
		git clone --quiet "$(CURDIR)" "$$clone/cairn" && \
		for tools in $(VENV) $(SAM_VENV) $(CHECKOV_VENV) node_modules; do ln -sfn "$(CURDIR)/$$tools" "$$clone/cairn/$$tools"; done && \
		if [ -d .mypy_cache ]; then cp -R .mypy_cache "$$clone/cairn/.mypy_cache"; fi && \
		cd "$$clone/cairn" && \
		echo "scaffold-check: cairn new demo-two in a fresh clone ($$clone/cairn), then the checks it can change" && \
		$(BIN)/python -m cairn new demo-two || exit 1; \
		{ $(BIN)/ruff check . && $(BIN)/ruff format --check . && \
			$(BIN)/mypy --strict functions/demo_two functions/pipelines.py tests/pipelines/test_demo_two.py && \
			$(MAKE) --no-print-directory -o $(STAMP) -o $(SAM_STAMP) -o $(CHECKOV_STAMP) -o $(NODE_STAMP) validate; \
		} > "$$clone/checks.log" 2>&1 & checks=$$!; \
		TEMPLATE_TOOLS_REQUIRED=1 $(PYTEST_RUN) -m "bundle and not long and not e2e"; tested=$$?; \
		wait $$checks; checked=$$?; \
		echo "scaffold-check: ruff, mypy --strict and make validate on the clone:"; cat "$$clone/checks.log"; \
		[ $$tested = 0 ] && [ $$checked = 0 ]

clean:
	rm -rf $(VENV) $(SAM_VENV) $(CHECKOV_VENV) .bench site dist node_modules .aws-sam .mypy_cache .ruff_cache .pytest_cache .hypothesis .cairn

# Every benchmark suite of issue 15, then docs/BENCHMARKS.md (tables, targets, plots). The peers (DBOS, Temporal,
# the durable execution SDK) and matplotlib live in virtualenvs of their own under .bench/venvs, never in .venv.
# A suite that could not measure makes the target fail after the others ran and the report was written; a
# missed target is a figure in the report, not a failure. BENCH_SUITES picks suites (e.g. BENCH_SUITES=cost).
BENCH_SUITES ?= cost offload overhead peers state_size concurrency cold_start map_scaling fair_share dev_scale read_units
BENCH_VENVS := .bench/venvs
PLOTS_PYTHON := $(BENCH_VENVS)/plots/bin/python

$(PLOTS_PYTHON): benchmarks/requirements-plots.txt
	$(PYTHON) -m venv $(BENCH_VENVS)/plots
	$(BENCH_VENVS)/plots/bin/pip install --quiet --disable-pip-version-check -r benchmarks/requirements-plots.txt
	touch $(PLOTS_PYTHON)

bench: $(STAMP) $(PLOTS_PYTHON)
	@started=$$(date +%s); status=0; \
	for suite in $(BENCH_SUITES); do \
		echo "== benchmarks.$$suite" >&2; \
		$(BIN)/python -m benchmarks.$$suite || { status=1; echo "benchmarks.$$suite could not measure everything" >&2; }; \
	done; \
	$(PLOTS_PYTHON) -m benchmarks.report --total-seconds $$(( $$(date +%s) - started )) || status=1; \
	exit $$status
