#!/usr/bin/env bash
# Make sure the system programs the course needs are present.
#   scripts/system_deps.sh lab    -> python3 with venv, Graphviz's `dot`, a C++ compiler `g++`
#                                    (torch.compile's Inductor builds its generated code with it),
#                                    and on Linux bubblewrap's `bwrap` (the grader's sandbox)
#   scripts/system_deps.sh test   -> the same, plus Debian's chromium for the browser tests
# As root on Debian it installs what is missing through apt; otherwise it stops and
# prints the exact command to run (or the conda route), because pip cannot install them.
set -euo pipefail

want=(python3 python3-venv graphviz g++)
[ "$(uname -s)" = Linux ] && want+=(bubblewrap)
[ "${1:-lab}" = test ] && want+=(chromium)

missing=()
for pkg in "${want[@]}"; do
  case $pkg in
    python3)      command -v python3 >/dev/null || missing+=(python3) ;;
    python3-venv) command -v python3 >/dev/null && python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv) ;;
    graphviz)     command -v dot >/dev/null || missing+=(graphviz) ;;
    g++)          command -v g++ >/dev/null || missing+=(g++) ;;
    bubblewrap)   command -v bwrap >/dev/null || missing+=(bubblewrap) ;;
    chromium)     [ -x /usr/bin/chromium ] || missing+=(chromium) ;;
  esac
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing system packages: ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
  exit 0
fi

cat >&2 <<MSG
Missing system packages: ${missing[*]}
pip cannot install these. Install them, then run make again:
  Debian/Ubuntu:  sudo apt-get install -y ${missing[*]}
  macOS:          brew install graphviz   (g++: xcode-select --install; Chromium for the browser tests)
  conda:          conda env create -f environment.yml && conda activate torch-under-the-hood
MSG
exit 1
