# fltrust -- every target creates or reuses the pinned virtual environment first.
# The environment lives outside the checkout, keyed by a hash of the pinned requirements, so
# fresh clones (and CI runs) on the same machine reuse it instead of reinstalling ~6.7 GB.

PYTHON      ?= python3
SHELL       := /bin/bash
REQ_HASH    := $(shell cat requirements.txt constraints.txt | sha256sum | cut -c1-12)
VENV        ?= $(HOME)/.cache/fltrust/venv-$(REQ_HASH)
PY          := $(VENV)/bin/python
STAMP       := $(VENV)/.fltrust-complete
# ruff and mypy, pinned in requirements-lint.txt, in a small environment of its own (keyed the same
# way), so that a new linter never rebuilds the pinned stack above
LINT_HASH   := $(shell cat requirements-lint.txt | sha256sum | cut -c1-12)
LINT_VENV   ?= $(HOME)/.cache/fltrust/lint-$(LINT_HASH)
LINT_STAMP  := $(LINT_VENV)/.fltrust-complete
LINT_PATHS  := fltrust tests benchmarks examples notebooks papers_repro setup.py
# Sphinx and its extensions (requirements-docs.txt) in an environment of their own, keyed the same
# way; it reads the pinned stack of $(VENV) through a .pth file, so autodoc imports fltrust's modules
# without a second 6.7 GB install. It is made by the pinned stack's own interpreter: a stack built by
# another Python (another `python3` on PATH) breaks in it (soupsieve failed to parse "li" on 3.11.2
# reading a stack built by 3.11.7)
DOCS_HASH   := $(shell cat requirements-docs.txt requirements.txt constraints.txt | sha256sum | cut -c1-12)
DOCS_VENV   ?= $(HOME)/.cache/fltrust/docs-$(DOCS_HASH)
DOCS_STAMP  := $(DOCS_VENV)/.fltrust-complete
# Real data: $FLTRUST_DATA, else ../shared/datasets when it exists, else ./data (synthetic fallback).
FLTRUST_DATA ?= $(shell if [ -d ../shared/datasets ]; then cd ../shared/datasets && pwd; else echo $(CURDIR)/data; fi)
export FLTRUST_DATA
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH),)
export FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION := 1

.PHONY: venv lint docs demo test lab test-fast repro-fairness repro-trust clean-venv

# No file prerequisites on purpose: the folder name already carries the hash of the pinned
# requirements, and a fresh clone's newer file times must not trigger a rebuild of a shared venv.
# Only an unfinished environment (no stamp) is removed and rebuilt. Each build holds a lock beside
# its folder (flock, where the system has it), so two clones making the same environment at once
# take turns: the second finds the stamp and reuses what the first built.
BUILD_LOCKED = mkdir -p $(dir $(1)) && $(if $(shell command -v flock),flock $(1).lock) bash -euc \
	'test -f $@ && exit 0; echo "==> creating $(1) ($(2); reused across clones)"; \
	set -x; rm -rf $(1); $(3); touch $@'

$(STAMP):
	@$(call BUILD_LOCKED,$(VENV),pinned stack,$(PYTHON) -m venv $(VENV); \
		$(PY) -m pip install --quiet --upgrade pip; \
		$(PY) -m pip install --quiet -r requirements.txt -c constraints.txt)

venv: $(STAMP)

$(LINT_STAMP):
	@$(call BUILD_LOCKED,$(LINT_VENV),pinned ruff and mypy,$(PYTHON) -m venv $(LINT_VENV); \
		$(LINT_VENV)/bin/python -m pip install --quiet -r requirements-lint.txt)

## lint: ruff (rules in pyproject.toml) on the package, tests, benchmarks, examples and notebooks,
## then mypy (settings in pyproject.toml: [tool.mypy]) on the package
lint: $(LINT_STAMP)
	$(LINT_VENV)/bin/ruff check $(LINT_PATHS)
	$(LINT_VENV)/bin/mypy

PURELIB = -c "import sysconfig; print(sysconfig.get_path(\"purelib\"))"
$(DOCS_STAMP): | $(STAMP)
	@$(call BUILD_LOCKED,$(DOCS_VENV),pinned Sphinx,$(PY) -m venv $(DOCS_VENV); \
		$(PY) $(PURELIB) > "$$($(DOCS_VENV)/bin/python $(PURELIB))/fltrust-stack.pth"; \
		$(DOCS_VENV)/bin/python -m pip install --quiet -r requirements-docs.txt -c constraints.txt)

## docs: the documentation site (docs/_build/html), offline; every warning is an error
docs: $(DOCS_STAMP)
	MPLBACKEND=Agg $(DOCS_VENV)/bin/sphinx-build -E -W --keep-going -n -q -b html docs docs/_build/html
	@if grep -rlE '<(script|link)[^>]+(src|href)="https?://' --include=*.html docs/_build/html; then \
		echo "docs: the pages above load a script or style sheet from the network; the site must work offline"; exit 1; fi
	@echo "==> docs/_build/html/index.html"

## demo: quick reproduction (every dataset family, then the quick fairness and trust reproductions)
demo: venv
	$(PY) -m fltrust demo

## test: lint, the whole test suite, then the documentation build (CI runs exactly this)
test: lint venv
	$(PY) -m pytest -q
	$(MAKE) --no-print-directory docs

## lab: JupyterLab on the pinned environment (figures inline, widget progress bars)
# fltrust is importable through the exported PYTHONPATH, which the server passes on to every kernel:
# the venv is shared by all clones (keyed by hash), so an editable install or a kernelspec naming one
# clone would point the other clones at the wrong checkout. MPLBACKEND is unset so that kernels draw
# inline, and PYTHONSTARTUP starts each kernel in the repository root, as papermill runs them, so the
# notebooks' repository-relative paths work. Extra options: make lab LAB_ARGS="--no-browser --port 8899"
lab: venv
	env -u MPLBACKEND PYTHONSTARTUP=$(CURDIR)/notebooks/_kernel_startup.py \
		$(VENV)/bin/jupyter lab --ServerApp.root_dir=$(CURDIR) $(LAB_ARGS)

test-fast: venv
	$(PY) -m pytest -q -m "not slow and not notebooks"

repro-fairness: venv
	$(PY) -m fltrust repro fairness

repro-trust: venv
	$(PY) -m fltrust repro trust

clean-venv:
	rm -rf $(VENV)
