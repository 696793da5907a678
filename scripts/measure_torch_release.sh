#!/usr/bin/env bash
# Holds `attnscope explain` against one torch release from PyPI on this machine's CPU:
#   scripts/measure_torch_release.sh 2.6.0 [--grid wide|quick] [--show N]
# 1. a cached venv with that release (scripts/torch-release-venv.sh; made once, reused);
# 2. tools/attnscope_explain_check from the build in $ATTNSCOPE_BUILD (default build/test-default,
#    configured and built here when the tool is missing);
# 3. the grid (core/torch_dispatch/explain_grid.cpp: every dtype, head_dim 1..512, every mask kind
#    and layout including additive masks in fp32 and q's dtype, GQA/MQA, Lq != Lkv, seq 1,
#    forward and training, forced kernels) through torch and through explain.
# Prints the table (kernel and memory agreement per kernel and pass) and the cases that disagree;
# writes it to build/explain-releases/torch-X.Y.Z.md and .json. Exit 0 when every case agrees,
# 1 when some disagree, 2 on bad arguments, 3 when the release cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
release=${1:?usage: measure_torch_release.sh X.Y.Z [--grid wide|quick] [--show N]}
shift
if ! [[ $release =~ ^2\.[0-9]+\.[0-9]+$ ]]; then
  echo "measure_torch_release: release must be X.Y.Z, a torch 2.x release on PyPI (got '$release')" >&2
  exit 2
fi
build=${ATTNSCOPE_BUILD:-build/test-default}
tool=$build/tools/attnscope_explain_check
if [ ! -x "$tool" ]; then
  echo "measure_torch_release: building $tool" >&2
  source scripts/env.sh
  [ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
  cmake --build "$build" -j "${JOBS:-2}" --target attnscope_explain_check >&2
fi
if ! py=$(bash scripts/torch-release-venv.sh "$release"); then
  echo "measure_torch_release: torch $release could not be installed" >&2
  exit 3
fi
out=build/explain-releases
mkdir -p "$out"
rc=0
"$tool" --python "$py" --markdown "$out/torch-$release.md" --json "$out/torch-$release.json" "$@" || rc=$?
[ "$rc" -le 1 ] || exit "$rc"
echo "measure_torch_release: table in $out/torch-$release.md" >&2
exit "$rc"
