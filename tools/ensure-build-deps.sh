#!/usr/bin/env bash
# Make sure this machine can build Lanes' C extension (the record codec's fast path):
# a C compiler and the headers of the Python that will run Lanes. Missing pieces are installed
# with apt-get (Debian/Ubuntu) when possible; otherwise we say what to install and go on, since
# Lanes still works with the pure-Python codec (the test suite will point it out).
set -euo pipefail
python=${1:-python3}

missing=()
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || missing+=(gcc)
include=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
[[ -f "$include/Python.h" ]] || missing+=(python3-dev)
((${#missing[@]})) || exit 0

if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "installing build dependencies: ${missing[*]}" >&2
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "warning: cannot build the C codec without: ${missing[*]} (install them, or set LANES_ALLOW_PURE_PYTHON=1)" >&2
fi
