# One command per intent. Every target sets up what it needs itself, so each works on a
# fresh Debian machine: a venv in .venv, Debian's etcd-server when no etcd is on PATH.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.DEFAULT_GOAL := help

.PHONY: help demo test lint fmt bench chaos clean deps etcd kubectl browser

help: ## Show the targets and what they are for
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip
	@$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

deps: $(STAMP) etcd ## Install Python packages into .venv and etcd when missing

etcd:
	@command -v etcd >/dev/null 2>&1 || { \
	  echo "etcd not found: installing Debian's etcd-server"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq etcd-server >/dev/null; \
	}
	@# Debian's package starts a system etcd on 2379; fedctl never uses it, every run starts its own.

kubectl:
	@command -v kubectl >/dev/null 2>&1 || { \
	  echo "kubectl not found: installing Debian's kubernetes-client"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq kubernetes-client >/dev/null || echo "kubernetes-client unavailable: kubectl tests will be skipped"; \
	}

browser: ## Install Debian's chromium for the dashboard's browser tests when missing
	@test -x /usr/bin/chromium || { \
	  echo "chromium not found: installing Debian's chromium"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null || echo "chromium unavailable: browser tests will be skipped"; \
	}
	@# Playwright (a dev extra) drives this executable; it never downloads a browser of its own.

lint: $(STAMP) ## ruff format check + ruff check, mypy strict, import-layer contracts
	$(VENV)/bin/ruff format --check federation policies clusters tests bench
	$(VENV)/bin/ruff check federation policies clusters tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

fmt: $(STAMP) ## Reformat and autofix what ruff can
	$(VENV)/bin/ruff format federation policies clusters tests bench
	$(VENV)/bin/ruff check --fix federation policies clusters tests bench

# The browser tests drive Chromium through Playwright's synchronous API, which keeps an event
# loop of its own on the main thread; they run in a pytest process of their own.
# The unit tests (CPU-bound, about two minutes) run beside the others, which mostly wait on
# etcd, the simulated members and their deadlines: the suite takes the longer of the two.
test: deps kubectl browser lint ## Install everything, lint, then run the whole test suite
	@mkdir -p .fedctl
	@$(PY) -m pytest -q -p no:cacheprovider --basetemp=.fedctl/unit-tmp tests/unit \
	  $(PYTEST_ARGS) > .fedctl/unit-tests.log 2>&1 & unit=$$!; \
	echo "$(PY) -m pytest -q --ignore=tests/e2e --ignore=tests/unit (tests/unit beside it)"; \
	$(PY) -m pytest -q --ignore=tests/e2e --ignore=tests/unit $(PYTEST_ARGS); rc=$$?; \
	wait $$unit; unit_rc=$$?; \
	echo "== tests/unit"; cat .fedctl/unit-tests.log; \
	test $$rc -eq 0 && test $$unit_rc -eq 0
	$(PY) -m pytest -q tests/e2e $(PYTEST_ARGS)

demo: deps ## Start etcd, the simulated fleet and the controller; apply the examples; tour
	$(PY) -m federation.cli.main up --tour

bench: deps ## Run the benchmarks; each prints JSON
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# Chaos for longer than `make test` allows: member faults, controller kills and an etcd
# restart while jobs arrive, invariants checked throughout. FEDCTL_CHAOS_SEED replays a run.
CHAOS_SECONDS ?= 900
chaos: deps ## Run the chaos test for 15 minutes (CHAOS_SECONDS=900; FEDCTL_CHAOS_SEED replays)
	FEDCTL_CHAOS_SECONDS=$(CHAOS_SECONDS) $(PY) -m pytest -q -s tests/integration/test_chaos.py $(PYTEST_ARGS)

clean: ## Remove the venv and local state
	rm -rf $(VENV) .fedctl .pytest_cache .mypy_cache .ruff_cache *.egg-info
