# Two commands do all the set-up:
#   make lab   create .venv, install everything, open the course in JupyterLab
#   make test  the same set-up, then every test
# A second run skips what is already installed (a stamp per extras set and torch build).
# PyTorch's build: TORCH=cpu (default, a 190 MB download) or TORCH=cuda (PyPI's CUDA build, several GB),
# e.g. `make lab TORCH=cuda`; scripts/python_env.sh says where each comes from.

VENV   ?= .venv
TORCH  ?= cpu
PY     := $(VENV)/bin/python

.PHONY: lab test lint bench gpu-check setup-lab setup-test notebooks release clean

setup-lab:
	@scripts/system_deps.sh lab
	@scripts/python_env.sh $(VENV) course $(TORCH)

setup-test:
	@scripts/system_deps.sh test
	@scripts/python_env.sh $(VENV) course,test $(TORCH)

lab: setup-lab
	@$(PY) scripts/lab.py . --open course/00_welcome.ipynb

test: setup-test lint
	$(PY) -m pytest

# Format, lint rules and types (settings in pyproject.toml); `make test` runs these first.
lint: setup-test
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	$(PY) -m mypy

bench: setup-test
	$(PY) -m bench.run_all

# On a lab's GPU machine (`make gpu-check TORCH=cuda`): every chapter run, every reference
# solution graded, a summary in gpu-check/ (scripts/gpu_check.py says what it holds).
gpu-check: setup-test
	$(PY) scripts/gpu_check.py

# After changing a chapter, vizlib or coursekit: store every notebook executed again,
# and write exercises/ anew from solutions/.
notebooks: setup-test
	$(PY) scripts/execute_notebooks.py
	$(PY) -m grader release

release: setup-lab
	$(PY) -m grader release

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
