# Two commands do all the set-up:
#   make lab   create .venv, install everything, open the course in JupyterLab
#   make test  the same set-up, then every test
# A second run skips what is already installed (a stamp per extras set and torch build).
# PyTorch's build: TORCH=cpu (default, a 190 MB download) or TORCH=cuda (PyPI's CUDA build, several GB),
# e.g. `make lab TORCH=cuda`; scripts/python_env.sh says where each comes from.

VENV   ?= .venv
TORCH  ?= cpu
PY     := $(VENV)/bin/python
# The oldest PyTorch the course and vizlib support: the floor of `torch>=` in pyproject.toml.
TORCH_FLOOR := $(shell sed -n 's/^ *"torch>=\([0-9.]*\)".*/\1/p' pyproject.toml)
FLOOR_VENV  ?= .venv-torch$(TORCH_FLOOR)
FLOOR_PY    := $(FLOOR_VENV)/bin/python

.PHONY: lab test test-torch-floor lint bench gpu-check setup-lab setup-test setup-torch-floor notebooks release clean

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

# The course on its oldest supported PyTorch, in a venv of its own (CI runs it after `make test`):
# every chapter runs with no error and the reference solutions get full marks
# (scripts/course_check.py), and vizlib's tests pass. Outputs are not compared: they are
# the pinned version's. TORCH=auto: the CPU build where PyTorch's index can be reached,
# otherwise PyPI's, the CUDA build (several GB; it runs on a CPU).
setup-torch-floor:
	@scripts/system_deps.sh lab
	@scripts/python_env.sh $(FLOOR_VENV) course,test auto $(TORCH_FLOOR)

test-torch-floor: setup-torch-floor
	$(FLOOR_PY) scripts/course_check.py --jobs 2
	$(FLOOR_PY) -m pytest tests/vizlib

# Format, lint rules and types (settings in pyproject.toml); `make test` runs these first.
lint: setup-test
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	$(PY) -m mypy

bench: setup-test
	$(PY) -m bench.run_all

# On a lab's GPU machine (`make gpu-check TORCH=cuda`): every chapter run, every reference
# solution graded, and a record in gpu-check/ (scripts/course_check.py says what it holds).
gpu-check: setup-test
	$(PY) scripts/course_check.py --jobs 4 --out gpu-check

# After changing a chapter, vizlib or coursekit: store every notebook executed again,
# and write exercises/ anew from solutions/.
notebooks: setup-test
	$(PY) scripts/execute_notebooks.py
	$(PY) -m grader release

release: setup-lab
	$(PY) -m grader release

clean:
	rm -rf $(VENV) $(FLOOR_VENV) .pytest_cache .hypothesis
