#!/usr/bin/env bash
# Create the virtual environment and install the project with the given extras.
#   scripts/python_env.sh VENV EXTRAS [TORCH [VERSION]]    e.g. scripts/python_env.sh .venv course,test cpu
# TORCH chooses PyTorch's build (`make lab TORCH=cuda`); VERSION its version, by default the
# course's pin in pyproject.toml. Another VERSION (`make test-torch-floor`) installs the
# project's other requirements around it (scripts/project_requirements.py), not the pin.
#   cpu   (the default) the CPU-only wheel, a 190 MB download, from PyTorch's CPU index, which pip
#         prefers to PyPI's. Where that index cannot be reached, the pip index you configured
#         must offer the CPU build: the install is checked, and stops with a message if not.
#   cuda  PyPI's own wheel: on Linux x86_64 that is the CUDA build, which pulls NVIDIA's CUDA
#         libraries (several GB); it uses an NVIDIA GPU when the machine has one and a driver.
#   auto  cpu where PyTorch's CPU index can be reached, cuda where it cannot: the only
#         build of that version pip can then get (PyPI has no CPU build for Linux x86_64).
# Skips the install when pyproject.toml has not changed since the last one for these extras
# and this build.
set -euo pipefail
venv=$1 extras=$2 torch=${3:-cpu} version=${4:-}
cpu_index=https://download.pytorch.org/whl/cpu

cpu_index_reachable() {
  python3 -c "import urllib.request as u; u.urlopen('$cpu_index/torch/', timeout=10)" 2>/dev/null
}

case $torch in
  cpu) ;;
  auto)
    if cpu_index_reachable; then torch=cpu; else
      echo "Cannot reach $cpu_index: installing PyPI's build of torch (the CUDA build on Linux x86_64, several GB)."
      torch=cuda
    fi ;;
  cuda)
    if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
      echo "TORCH=cuda: PyPI has CUDA builds of PyTorch for Linux x86_64 only; here use TORCH=cpu (the default)." >&2
      exit 2
    fi ;;
  *) echo "TORCH=$torch: choose TORCH=cpu (the default) or TORCH=cuda, e.g. make lab TORCH=cuda" >&2; exit 2 ;;
esac
pin=$(sed -n 's/^ *"torch==\([0-9.]*\)".*/\1/p' pyproject.toml)
[ -n "$pin" ] || { echo "pyproject.toml pins no torch==VERSION in the course extra" >&2; exit 2; }
version=${version:-$pin}
stamp="$venv/.installed-${extras//,/-}-torch-$torch"
[ "$version" = "$pin" ] || stamp="$stamp-$version"

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then exit 0; fi

# "2.13.0 cpu", "2.13.0 cuda", or "none" when torch is not installed.
installed_torch() {
  "$venv/bin/python" -c 'import torch; print(torch.__version__.split("+")[0], "cuda" if torch.version.cuda else "cpu")' \
    2>/dev/null || echo none
}

# Enough disk for what this install writes, checked before pip starts: pip's own "No space left
# on device" comes halfway through, with the environment half made. Measured sizes of a finished
# environment: 1.7 GB with the CPU build, 5.4 GB with the CUDA build; pip also unpacks its
# downloads in the temporary folder.
check_free_disk() {
  local need_mb dir have_mb
  need_mb=$([ "$torch" = cpu ] && echo 2500 || echo 8000)
  for dir in "$venv" "${TMPDIR:-/tmp}"; do
    have_mb=$(df -Pk "$dir" | awk 'NR == 2 {print int($4 / 1024)}')
    [ "$have_mb" -ge "$need_mb" ] && continue
    echo "Not enough free disk to install into $venv: the $torch build needs about $need_mb MB free" >&2
    echo "where $dir lies, and $have_mb MB are free there. Free some space (\`df -h\` shows where;" >&2
    echo "\`python3 -m pip cache purge\` empties pip's cache), or put the environment on another disk:" >&2
    echo "make lab VENV=/path/on/a/bigger/disk/venv" >&2
    exit 1
  done
}

have=$(installed_torch)
[ "$have" = "$version $torch" ] || check_free_disk
echo "Installing the course's Python packages into $venv (first time: a few minutes)..."
"$venv/bin/python" -m pip install -q --upgrade pip
# torch first, pinned and of the chosen build: later installs then find it already there.
if [ "$have" != "$version $torch" ]; then
  index=()
  if [ "$torch" = cpu ]; then
    if cpu_index_reachable; then
      index=(--extra-index-url "$cpu_index")  # its +cpu wheel outranks PyPI's CUDA build
    else
      echo "Cannot reach $cpu_index: taking torch $version from your configured pip index."
    fi
  fi
  [ "$have" = none ] || "$venv/bin/python" -m pip uninstall -q -y torch  # another version or build
  "$venv/bin/python" -m pip install -q ${index[@]+"${index[@]}"} "torch==$version"
  have=$(installed_torch)
  if [ "$have" != "$version $torch" ]; then
    echo "Asked for the $torch build of torch $version, but pip installed: $have." >&2
    echo "Your pip configuration (see \`pip config list\`) offers that build first; point it at" >&2
    echo "the index you want, or choose the other build: make lab TORCH=$([ "$torch" = cpu ] && echo cuda || echo cpu)" >&2
    exit 1
  fi
fi
if [ "$version" = "$pin" ]; then
  "$venv/bin/python" -m pip install -q -e ".[${extras}]"
else  # the extras pin torch to $pin: everything else they name, around the torch just installed
  "$venv/bin/python" scripts/project_requirements.py "$extras" --without torch >"$venv/requirements-$version.txt"
  "$venv/bin/python" -m pip install -q -r "$venv/requirements-$version.txt"
  "$venv/bin/python" -m pip install -q --no-deps -e .
fi
# Jupyter's server, nbformat and nbclient import jsonschema, which imports rfc3987_syntax where
# it is installed (jupyter-events asks for it): that package builds an Earley grammar at import,
# about 1.4 s of CPU in every such process (each JupyterLab start, each nbval or grader run), to
# check IRIs, which no notebook or event of ours holds. Marked missing at every start of this
# environment's Python (a .pth line), jsonschema skips that one format. grader/host does the same
# for a grader installed without this script.
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo 'import sys; sys.modules.setdefault("rfc3987_syntax", None)' >"$site/course-skip-iri-grammar.pth"
# The course's own packages compiled once: where PYTHONDONTWRITEBYTECODE is set (some machines
# set it for everyone; the grader's sandbox, whose folders are read-only, sets it too) Python
# would otherwise compile them again in every process that imports them (0.2 to 0.3 s of CPU).
"$venv/bin/python" -m compileall -q vizlib coursekit grader harness >/dev/null
# Build matplotlib's font cache once, outside the notebooks (it prints while it does).
"$venv/bin/python" -c "import matplotlib.pyplot" >/dev/null 2>&1
touch "$stamp"
