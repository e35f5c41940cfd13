# Two commands on a fresh machine with Python 3: `make demo` (main job) and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# A stamp per install, named after the build files and the compiled sources: whichever of them
# changes, the next `make demo` or `make test` reinstalls (and rebuilds the compiled modules).
#   demo: the `demo` extra only (the Kafka clients and the embedded broker), what `streamnb demo` needs
#   dev:  the `dev` extra (every extra, the test and documentation tools); it includes demo's, so
#         installing it stamps both, while installing demo's leaves `make test` to install dev's.
COMPILED   := $(wildcard streamnb/*/*.pxd) $(patsubst %.pxd,%.py,$(wildcard streamnb/*/*.pxd))
HASH       := $(shell cat pyproject.toml setup.py $(COMPILED) | cksum | cut -d' ' -f1)
DEMO_STAMP := $(VENV)/.installed-demo-$(HASH)
DEV_STAMP  := $(VENV)/.installed-dev-$(HASH)
BUILD_FILES := pyproject.toml setup.py $(COMPILED)

.PHONY: setup demo test test-fast test-slow test-pure fuzz typecheck docs bench clean

setup: $(DEV_STAMP)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(DEMO_STAMP): $(BUILD_FILES) | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[demo]'
	rm -f $(VENV)/.installed-demo-*
	touch $(DEMO_STAMP)

$(DEV_STAMP): $(BUILD_FILES) | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $(DEV_STAMP) $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/streamnb demo

# a run killed by a signal (a crash in an extension) names the test it was in, last
pytest = $(BIN)/python -m pytest -q $(1) || { status=$$?; test ! -f .pytest-running || \
         echo "pytest died (status $$status) in: $$(cat .pytest-running)"; exit $$status; }

# The tiers. FAST: the learners, statistics, structure, drift, text and spam (no broker, MTA,
# packaging or docs), in parallel over the machine's cores, each test sent to the next free
# process, except the tests marked with one `xdist_group`, which run in one process and share
# what it computed once (--dist loadgroup: a fuzzer configuration's streams, the parsed
# networks of tests/data); the rest (SLOW) talks to real
# brokers, MTAs, daemons and builds, and waits on them more than it computes: it runs in
# SLOW_WORKERS processes (one more than 2 cores), each test file in one of them (--dist loadfile:
# a file's broker, MTA or daemon fixture starts once; every test has its own topics, ports and
# directories). `make test` runs both; `make test-pure` runs FAST again on the pure-Python path,
# the only code the compiled modules change.
FAST := streamnb tests/naive_bayes tests/bn tests/stats tests/structure tests/drift tests/text \
        tests/spam $(wildcard tests/fuzz) tests/test_perkey.py tests/test_perkey_users.py tests/test_persistence.py \
        tests/test_persistence_migration.py tests/test_cli_evaluate.py
SLOW := tests $(addprefix --ignore=,$(filter tests/%,$(FAST)))
WORKERS ?= auto
SLOW_WORKERS ?= 3

test: $(DEV_STAMP)
	$(BIN)/python -m mypy
	$(MAKE) --no-print-directory test-fast test-slow

test-fast: $(DEV_STAMP)
	$(call pytest,-n $(WORKERS) --dist loadgroup $(FAST))

test-slow: $(DEV_STAMP)
	$(call pytest,-n $(SLOW_WORKERS) --dist loadfile $(SLOW))

# the learners' tiers on the pure-Python path, as a machine without a C compiler runs them (the
# tests that compare the compiled path with the Python one skip)
test-pure: $(DEV_STAMP)
	STREAMNB_PURE_PYTHON=1 $(call pytest,-n $(WORKERS) --dist loadgroup $(FAST))

# the stream fuzzer's long profile (tests/fuzz: 50 streams of 300 events per configuration),
# compiled (and compared with pure Python), then on the pure-Python path; each prints its table
# (the second runs even if the first fails; the target fails if either did)
fuzz: $(DEV_STAMP)
	STREAMNB_FUZZ=long $(BIN)/python -m pytest -q -p no:xdist tests/fuzz; compiled=$$?; \
	STREAMNB_FUZZ=long STREAMNB_PURE_PYTHON=1 $(BIN)/python -m pytest -q -p no:xdist tests/fuzz; pure=$$?; \
	test $$compiled = 0 && test $$pure = 0

typecheck: $(DEV_STAMP)
	$(BIN)/python -m mypy

docs: $(DEV_STAMP)
	$(BIN)/python -m sphinx -W --keep-going -q -b html docs docs/_build/html
	@echo "the site: docs/_build/html/index.html"

bench: $(DEV_STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info docs/_build
