#!/usr/bin/env bash
# Creates once, then reuses, a virtual environment with PyPI's torch and numpy for the torch tests
# and benchmarks (and transformers, whose tiny GPT-2 built from a config `attnscope record` is
# tested on; no model is downloaded), and prints its python's path on stdout (progress goes to stderr).
#   ATTNSCOPE_TORCH_VENV   where the environment lives
#                          (default ${XDG_CACHE_HOME:-~/.cache}/attnscope/torch-venv)
#   ATTNSCOPE_TORCH_SPEC   the pip requirement for torch (default torch==2.15.*)
# The PyPI wheel brings several GB of CUDA libraries; it imports and runs on the CPU without a
# GPU. The environment sits outside the checkout so that CI's fresh clones reuse it.
set -euo pipefail
venv=${ATTNSCOPE_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/attnscope/torch-venv}
spec=${ATTNSCOPE_TORCH_SPEC:-torch==2.15.*}
py=$venv/bin/python
if [ -x "$py" ] && "$py" -c 'import torch, numpy' >/dev/null 2>&1; then
  # An environment made before transformers was part of it gets it added (about 25 s).
  if ! "$py" -c 'import transformers' >/dev/null 2>&1; then
    "$py" -m pip install -q --disable-pip-version-check transformers >&2 ||
      echo "torch-venv: transformers could not be installed; its recorder test will skip" >&2
  fi
  echo "$py"
  exit 0
fi
echo "torch-venv: creating $venv with $spec (several GB, once)" >&2
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv" >&2
"$py" -m pip install -q --disable-pip-version-check "$spec" numpy transformers >&2
"$py" -c 'import torch, numpy; print("torch-venv: torch", torch.__version__, file=__import__("sys").stderr)'
echo "$py"
