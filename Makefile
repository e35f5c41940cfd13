# Two commands on a fresh machine with Python 3: `make demo` (main job) and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# reinstalled (and the C kernels rebuilt) whenever the build files or the C source change
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml setup.py streamnb/_kernels.c | cksum | cut -d' ' -f1)

.PHONY: setup demo test typecheck bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml setup.py streamnb/_kernels.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/streamnb demo

test: $(STAMP)
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q

typecheck: $(STAMP)
	$(BIN)/python -m mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
