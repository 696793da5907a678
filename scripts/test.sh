#!/usr/bin/env bash
# Installs what is missing, then builds and tests both configurations: CPU-only (ATTNSCOPE_CUDA=OFF)
# and the default (CUDA when a toolkit is found, GUI on). GPU tests (ctest label gpu) skip with a
# message when no device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
source scripts/env.sh
# Fresh clones in other folders still hit the compiler cache (ccache, when installed).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
# The torch tests run against a real PyPI torch in a cached virtual environment.
ATTNSCOPE_TEST_PYTHON=$(bash scripts/torch-venv.sh)
export ATTNSCOPE_TEST_PYTHON

for config in cpu-only default; do
  dir=build/test-$config
  cuda=AUTO
  [ "$config" = cpu-only ] && cuda=OFF
  echo "=== $config: configure (ATTNSCOPE_CUDA=$cuda)"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNSCOPE_CUDA=$cuda
  echo "=== $config: build"
  cmake --build "$dir" -j "$JOBS"
  echo "=== $config: test"
  ctest --test-dir "$dir" --output-on-failure -j 2
done
