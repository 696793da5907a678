#!/usr/bin/env bash
# The check for a GPU machine: build for its architecture, run the GPU tests (ctest -L gpu), then
# print the performance table of the CUDA backends and, where python3 has torch, the same table
# for torch's SDPA backends, measured in the same session. Copy the tables with the GPU, driver
# and date into docs/PERFORMANCE.md.
#
#   scripts/gpu-check.sh [--skip-tests] [--skip-bench] [--quick]
#
# Environment: BUILD_DIR (default build-gpu), CUDA_ARCH (default from nvidia-smi, else 90),
# JOBS (default 16). Sized to finish well under 10 minutes on an H200, build included.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-gpu}
JOBS=${JOBS:-16}
run_tests=1
run_bench=1
seqs=1024,4096,16384
for arg in "$@"; do
  case $arg in
    --skip-tests) run_tests=0 ;;
    --skip-bench) run_bench=0 ;;
    --quick) seqs=1024,4096 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $arg" >&2; exit 2 ;;
  esac
done

if [[ -z ${CUDA_ARCH:-} ]]; then
  CUDA_ARCH=90
  if command -v nvidia-smi >/dev/null 2>&1; then
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .' || true)
    [[ $cap =~ ^[0-9]+$ ]] && CUDA_ARCH=$cap
  fi
fi

section() { printf '\n=== %s (%s) ===\n' "$1" "$(date -u +%H:%M:%S)"; }

section "environment"
date -u
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv || true
nvcc --version | tail -n1
echo "arch: sm_$CUDA_ARCH, build: $BUILD, jobs: $JOBS"

section "configure and build"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DATTNSCOPE_GUI=OFF \
  -DATTNSCOPE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" >/dev/null
SECONDS=0
cmake --build "$BUILD" -j "$JOBS"
echo "build: ${SECONDS}s"

status=0
if (( run_tests )); then
  section "GPU tests (ctest -L gpu)"
  (cd "$BUILD" && ctest -L gpu --output-on-failure --timeout 600) || status=$?
fi

if (( run_bench )); then
  section "AttnScope CUDA backends"
  "$BUILD/bench/bench_cuda" --seq "$seqs" --head-dim 64,128 --mask none,causal --dtype fp16,bf16 || status=$?
  section "torch SDPA backends"
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    python3 "$ROOT/scripts/bench_torch_sdpa.py" --seq "$seqs" --head-dim 64,128 --mask none,causal --dtype fp16,bf16 || status=$?
  else
    echo "python3 with a CUDA-enabled torch not found; torch table skipped"
  fi
fi
section "done (exit $status)"
exit $status
