#!/usr/bin/env bash
# Creates once, then reuses, a virtual environment with one torch release from PyPI (CPU use) and
# prints its python's path on stdout (progress goes to stderr):
#   scripts/torch-release-venv.sh 2.6.0
# The environments live in ${ATTNSCOPE_TORCH_CACHE:-${XDG_CACHE_HOME:-~/.cache}/attnscope}/torch-X.Y.Z,
# outside the checkout so that CI's fresh clones reuse them. They are made with uv (installed
# with pip when missing), whose cache hard-links each wheel's files into every environment that
# uses it: releases that share their CUDA libraries (several GB per set) store them once.
# torch before 2.3 was built against numpy 1.x, so those environments get numpy<2; 2.1's
# profiler imports pkg_resources, which setuptools 70 and later no longer carry.
set -euo pipefail
release=${1:?usage: torch-release-venv.sh X.Y.Z (a torch release on PyPI, e.g. 2.6.0)}
if ! [[ $release =~ ^2\.[0-9]+\.[0-9]+$ ]]; then
  echo "torch-release-venv: release must be X.Y.Z, a torch 2.x release on PyPI (got '$release')" >&2
  exit 2
fi
cache=${ATTNSCOPE_TORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/attnscope}
venv=$cache/torch-$release
py=$venv/bin/python
if [ -x "$py" ] && "$py" -c "import torch, torch.profiler, sys; sys.exit(torch.__version__.split('+')[0] != '$release')" >/dev/null 2>&1; then
  echo "$py"
  exit 0
fi
if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check uv >&2
fi
minor=$(echo "$release" | cut -d. -f2)
extra=(numpy)
[ "$minor" -lt 3 ] && extra=('numpy<2' 'setuptools<70')
echo "torch-release-venv: creating $venv with torch==$release (several GB the first time)" >&2
mkdir -p "$cache"
rm -rf "$venv.partial"
uv venv -q --python "$(command -v python3)" "$venv.partial" >&2
# uv writes absolute paths of the environment into its scripts: build it where it will live.
rm -rf "$venv"
mv "$venv.partial" "$venv"
if ! uv pip install -q --python "$py" "torch==$release" "${extra[@]}" >&2; then
  rm -rf "$venv"
  echo "torch-release-venv: torch==$release could not be installed from PyPI" >&2
  exit 1
fi
"$py" -c 'import torch, sys; print("torch-release-venv: torch", torch.__version__, file=sys.stderr)'
echo "$py"
