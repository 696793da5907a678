#!/usr/bin/env bash
# The check for a GPU machine: build the CUDA tests and bench_cuda for its architecture, run the
# CUDA and CUPTI tests, measure the tracing overhead (CUPTI capture on versus off), then print the
# performance table of the CUDA backends and, where python3 has torch, the same table for torch's
# SDPA backends, measured in the same session. Copy the tables with the GPU, driver and date into
# docs/PERFORMANCE.md.
#
#   scripts/gpu-check.sh [--skip-tests] [--skip-overhead] [--skip-bench] [--skip-explain] [--quick] [--full]
#                        [--build-only] [--dry-run]
#
#   --quick       shorter bench table (seq 1024,4096)       --full  build everything, run all of ctest
#   --build-only  configure and build, run nothing          --dry-run  print the cmake commands only
#   --skip-explain  skip `attnscope explain` vs torch's real choice and max_memory_allocated
#
# On the lent GPU machine (device tool). Its image has nvcc, CMake, ninja and python3+torch but not
# the -dev packages (SQLite, nlohmann_json, GoogleTest) and no network, so first, HERE:
#     scripts/gpu-prepare.sh          # writes .gpu-deps/ (git-ignored, about 10 MiB)
# then one device-tool call, from the repo root:
#     run  command: "bash scripts/gpu-check.sh"   carry: [".gpu-deps"]   timeout_s: 480
# Estimated (not yet run on a GPU) to finish in about 6-7 minutes on an H200 (the train tests,
# test_cuda_train and the train points of test_plan_buffers_cuda, add an estimated minute, their
# float64 gradient checks running on the host; flash_bwd.cu adds little to the build); 480 s leaves room
# for one rerun (e.g. "bash scripts/gpu-check.sh --skip-tests", which reuses build-gpu/ on a
# still-warm machine) inside the 15 minutes of device time, machine start included. Everything
# printed is also written to $OUT/gpu-check.log (with build.log and the overhead TSVs) so it comes
# back even when the command is stopped at its time limit.
# The explain check (scripts/explain_gpu_check.py; it also builds the attnscope binary) and the
# CUDA run of the releases' grid (tools/attnscope_explain_check --device cuda, 898 cases, written
# to $OUT/explain-grid-cuda.md) add an estimated 2-4 minutes; --skip-explain leaves them out.
#
# Dependencies: .gpu-deps/ when present (static libraries: the binaries need nothing from it at run
# time), else the system's packages; the script stops before configuring, naming what is missing.
# The CPU backends are built with -DATTNSCOPE_CPU_BLAS=none (no OpenBLAS needed; not measured here).
#
# Environment: BUILD_DIR (default build-gpu), CUDA_ARCH (default from nvidia-smi, else 90),
# JOBS (default: nproc), GPU_DEPS (default .gpu-deps), OVERHEAD_REPS (default 30),
# GPU_DEPS_FALLBACK=1 (use the system's libsqlite3.so.0 and build the bundled GoogleTest sources
# even when the bundle's static libraries link; the script does this by itself when they don't).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-gpu}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 16)}
DEPS=${GPU_DEPS:-$ROOT/.gpu-deps}
OVERHEAD_REPS=${OVERHEAD_REPS:-30}
run_tests=1
run_overhead=1
run_bench=1
run_explain=1
full=0
dry_run=0
seqs=1024,4096,16384
for arg in "$@"; do
  case $arg in
    --skip-tests) run_tests=0 ;;
    --skip-overhead) run_overhead=0 ;;
    --skip-bench) run_bench=0 ;;
    --skip-explain) run_explain=0 ;;
    --quick) seqs=1024,4096 ;;
    --full) full=1 ;;
    --build-only) run_tests=0; run_overhead=0; run_bench=0; run_explain=0 ;;
    --dry-run) dry_run=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $arg" >&2; exit 2 ;;
  esac
done

# On the device machine $OUT is a folder whose files come back; keep a full log there.
LOGDIR=${OUT:-}
if [[ -n $LOGDIR && -d $LOGDIR && $dry_run == 0 ]]; then
  exec > >(tee -a "$LOGDIR/gpu-check.log") 2>&1
else
  LOGDIR=$BUILD
fi

section() { printf '\n=== %s (%s) ===\n' "$1" "$(date -u +%H:%M:%S)"; }
die() { printf 'gpu-check: %s\n' "$@" >&2; exit 1; }

if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

if [[ -z ${CUDA_ARCH:-} ]]; then
  CUDA_ARCH=90
  if command -v nvidia-smi >/dev/null 2>&1; then
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .' || true)
    [[ $cap =~ ^[0-9]+$ ]] && CUDA_ARCH=$cap
  fi
fi

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)

# ---- dependencies -------------------------------------------------------------------------------
MA=$( (gcc -print-multiarch || true) 2>/dev/null)
[[ -n $MA ]] || MA=x86_64-linux-gnu
dep_args=()
dep_note=""
probe_dir=""
cleanup() { [[ -n $probe_dir ]] && rm -rf "$probe_dir"; return 0; }
trap cleanup EXIT

# Links and runs a tiny program: prints nothing, returns the compiler's / program's status.
probe() {  # probe NAME SOURCE ARGS...
  local name=$1 src=$2
  shift 2
  [[ -n $probe_dir ]] || probe_dir=$(mktemp -d)
  printf '%s\n' "$src" >"$probe_dir/$name.cpp"
  "${CXX:-c++}" -std=c++17 "$probe_dir/$name.cpp" -o "$probe_dir/$name" "$@" >"$probe_dir/$name.log" 2>&1 &&
    "$probe_dir/$name" >>"$probe_dir/$name.log" 2>&1
}

if [[ -d $DEPS ]]; then
  [[ -f $DEPS/MANIFEST.txt ]] && MA=$(sed -n 's/^multiarch=//p' "$DEPS/MANIFEST.txt" | head -n1)
  [[ -n $MA ]] || MA=x86_64-linux-gnu
  lib=$DEPS/lib/$MA
  missing=()
  for f in include/sqlite3.h "lib/$MA/libsqlite3.a" include/nlohmann/json.hpp \
           share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake include/gtest/gtest.h \
           "lib/$MA/libgtest.a" "lib/$MA/libgtest_main.a" "lib/$MA/cmake/GTest/GTestConfig.cmake"; do
    [[ -e $DEPS/$f ]] || missing+=("$DEPS/$f")
  done
  ((${#missing[@]} == 0)) || die "the bundle $DEPS is incomplete; rerun scripts/gpu-prepare.sh here. Missing:" "${missing[@]/#/  }"
  sqlite_lib=$lib/libsqlite3.a
  gtest_dir=$lib/cmake/GTest
  if ((dry_run == 0)); then
    # The static libraries were built on the development machine; check that this machine's
    # compiler links them, else fall back (SQLite: the system's run-time library; GoogleTest:
    # build the bundled sources).
    # GPU_DEPS_FALLBACK=1 takes both fallbacks without probing.
    force=${GPU_DEPS_FALLBACK:-0}
    why="does not link here"
    [[ $force == 1 ]] && why="is set aside (GPU_DEPS_FALLBACK=1)"
    if [[ $force == 1 ]] || ! probe sqlite '#include <sqlite3.h>
int main() { return sqlite3_libversion_number() > 0 ? 0 : 1; }' -I"$DEPS/include" "$sqlite_lib" -pthread -ldl -lm; then
      sys=$(ldconfig -p 2>/dev/null | awk '/libsqlite3\.so\.0 .*x86-64/ {print $NF; exit}')
      [[ -n $sys ]] || die "the bundled libsqlite3.a does not link here and the system has no libsqlite3.so.0:" "$(tail -n 5 "$probe_dir/sqlite.log" 2>/dev/null)"
      echo "gpu-check: the bundled libsqlite3.a $why; using the system's $sys with the bundled header"
      sqlite_lib=$sys
    fi
    if [[ $force == 1 ]] || ! probe gtest '#include <gtest/gtest.h>
TEST(Probe, Links) { EXPECT_EQ(1, 1); }' -I"$DEPS/include" "$lib/libgtest_main.a" "$lib/libgtest.a" -pthread; then
      [[ -f $DEPS/src/googletest/CMakeLists.txt ]] || die "the bundled libgtest.a does not link here and the bundle has no GoogleTest sources:" "$(tail -n 5 "$probe_dir/gtest.log" 2>/dev/null)"
      echo "gpu-check: the bundled libgtest.a $why; building the bundled GoogleTest sources"
      gprefix=$BUILD/_deps/googletest
      cmake -S "$DEPS/src/googletest" -B "$BUILD/_deps/googletest-build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_INSTALL_PREFIX="$gprefix" -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_GMOCK=ON >/dev/null
      cmake --build "$BUILD/_deps/googletest-build" -j "$JOBS" >/dev/null
      cmake --install "$BUILD/_deps/googletest-build" >/dev/null
      gtest_dir=$gprefix/lib/cmake/GTest
    fi
  fi
  dep_args=(-DCMAKE_PREFIX_PATH="$DEPS" -DSQLite3_INCLUDE_DIR="$DEPS/include" -DSQLite3_LIBRARY="$sqlite_lib"
            -DGTest_DIR="$gtest_dir" -Dnlohmann_json_DIR="$DEPS/share/cmake/nlohmann_json")
  dep_note="dependencies: bundle $DEPS ($(sed -n 1p "$DEPS/MANIFEST.txt" 2>/dev/null | sed 's/.* on //'))"
else
  # No bundle: the system's packages must provide everything.
  have_file() {  # have_file NAME DIRS...: is NAME in one of DIRS (two levels down at most)?
    local name=$1 d
    shift
    for d in "$@"; do
      [[ -d $d ]] && [[ -n $(find "$d" -maxdepth 3 -name "$name" -print -quit 2>/dev/null) ]] && return 0
    done
    return 1
  }
  libdirs=("/usr/lib/$MA" /usr/lib /usr/lib64 /usr/local/lib /usr/local/lib64)
  cmakedirs=("/usr/lib/$MA/cmake" /usr/lib/cmake /usr/lib64/cmake /usr/share/cmake /usr/local/lib/cmake /usr/local/share/cmake)
  missing=()
  { [[ -f /usr/include/sqlite3.h || -f /usr/local/include/sqlite3.h ]] &&
    { have_file 'libsqlite3.so' "${libdirs[@]}" || have_file 'libsqlite3.a' "${libdirs[@]}"; }; } ||
    missing+=("SQLite 3 (header sqlite3.h and libsqlite3.so or .a; Debian/Ubuntu: libsqlite3-dev)")
  have_file nlohmann_jsonConfig.cmake "${cmakedirs[@]}" ||
    missing+=("nlohmann_json >= 3.10 with its CMake package (nlohmann-json3-dev)")
  have_file GTestConfig.cmake "${cmakedirs[@]}" ||
    missing+=("GoogleTest with its CMake package GTest (libgtest-dev, libgmock-dev)")
  if ((${#missing[@]})); then
    die "no .gpu-deps/ bundle ($DEPS) and the system lacks:" "${missing[@]/#/  - }" \
        "Run scripts/gpu-prepare.sh on the development machine and pass carry [\".gpu-deps\"] to the device tool."
  fi
  dep_note="dependencies: system packages"
fi

# glibc before 2.34 keeps dlopen and pthreads in their own libraries, which static SQLite needs.
extra_libs=()
glibc=$(ldd --version 2>/dev/null | head -n1 | grep -oE '[0-9]+\.[0-9]+$' || true)
if [[ -n $glibc ]] && (( ${glibc%%.*} == 2 && ${glibc#*.} < 34 )); then
  extra_libs=(-DCMAKE_CXX_STANDARD_LIBRARIES="-ldl -lpthread" -DCMAKE_CUDA_STANDARD_LIBRARIES="-ldl -lpthread")
fi

configure=(cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release
           -DATTNSCOPE_GUI=OFF -DATTNSCOPE_TESTS=ON -DATTNSCOPE_BENCH=ON -DATTNSCOPE_CUDA=ON
           -DATTNSCOPE_CPU_BLAS=none -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" "${dep_args[@]}" "${extra_libs[@]}")
# What the GPU part needs: the CUDA and CUPTI tests (the gpu-labelled ones and the ones that check
# whichever case the machine is in; test_cuda_train and test_plan_buffers_cuda check pass = train:
# gradients against float64, plan == allocation) and bench_cuda. --full builds everything.
wanted=(test_cuda_host_logic test_cuda_train_host test_cuda_backward_serial test_cuda_registry test_cuda_backends test_cuda_train
        test_cuda_plan_sizes test_plan_buffers_cuda test_cupti_adapter test_cupti_unavailable
        test_cupti_gpu bench_cuda attnscope attnscope_explain_check)

if ((dry_run)); then
  echo "# $dep_note"
  printf '%q ' "${configure[@]}"; echo
  if ((full)); then echo "cmake --build $(printf %q "$BUILD") -j $JOBS"
  else echo "cmake --build $(printf %q "$BUILD") -j $JOBS --target ${wanted[*]}"; fi
  exit 0
fi

section "environment"
date -u
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version,clocks.max.sm --format=csv || echo "nvidia-smi not found"
command -v nvcc >/dev/null 2>&1 || die "nvcc not found (not on PATH, nor /usr/local/cuda/bin)"
nvcc --version | tail -n1
echo "arch: sm_$CUDA_ARCH, build: $BUILD, jobs: $JOBS"
echo "$dep_note"

section "configure and build"
mkdir -p "$BUILD" "$LOGDIR"
SECONDS=0
"${configure[@]}" >"$LOGDIR/configure.log" 2>&1 || { tail -n 40 "$LOGDIR/configure.log"; die "configure failed (log: $LOGDIR/configure.log)"; }
grep -E '^-- AttnScope' "$LOGDIR/configure.log" || true
targets=()
if ((full == 0)); then
  available=$(cmake --build "$BUILD" --target help 2>/dev/null | sed -E 's/^\.\.\. //; s/:.*$//')
  for t in "${wanted[@]}"; do
    grep -qx "$t" <<<"$available" && targets+=("$t") || echo "gpu-check: target $t not in this build"
  done
  ((${#targets[@]})) || die "none of the GPU targets exist: is this a CUDA build? (see $LOGDIR/configure.log)"
fi
echo "configure: ${SECONDS}s"
SECONDS=0
build_cmd=(cmake --build "$BUILD" -j "$JOBS")
((${#targets[@]})) && build_cmd+=(--target "${targets[@]}")
"${build_cmd[@]}" >"$LOGDIR/build.log" 2>&1 || { grep -E -B2 -A12 'error|FAILED' "$LOGDIR/build.log" | head -n 80; die "build failed (log: $LOGDIR/build.log)"; }
echo "build: ${SECONDS}s (${targets[*]:-all targets})"

status=0
if ((run_tests)); then
  if ((full)); then
    section "tests (ctest, all)"
    (cd "$BUILD" && ctest --output-on-failure --timeout 300 -j 4) || status=1
  else
    section "CUDA and CUPTI tests (ctest)"
    built=()
    for t in "${targets[@]}"; do [[ $t == test_* ]] && built+=("$t"); done
    regex="^($(IFS='|'; echo "${built[*]}"))\$"
    (cd "$BUILD" && ctest -R "$regex" --output-on-failure --timeout 300) || status=1
  fi
fi

BENCH=$BUILD/bench/bench_cuda
if ((run_overhead)); then
  section "tracing overhead: CUPTI capture off / on / off, in three processes"
  # CUPTI stays on for the process once enabled, so on and off run in separate processes; off runs
  # before and after on, so a drift in clocks shows as the off-to-off spread.
  oargs=(--backends "cuda.flash,cuda.math" --dtype fp16 --head-dim 128 --mask none --seq "4096,8192"
         --warmup 5 --reps "$OVERHEAD_REPS" --tsv)
  ok=1
  for pass in off on off2; do
    extra=()
    [[ $pass == on ]] && extra=(--capture)
    if ! timeout 180 "$BENCH" "${oargs[@]}" "${extra[@]}" >"$LOGDIR/overhead_$pass.tsv" 2>"$BUILD/overhead_$pass.err"; then
      echo "bench_cuda ($pass) failed:"; cat "$BUILD/overhead_$pass.err" "$LOGDIR/overhead_$pass.tsv"; ok=0; status=1; break
    fi
  done
  if ((ok)); then
    grep '^#' "$LOGDIR/overhead_on.tsv" || true
    awk -F'\t' '
      FNR == 1 { f++ }
      /^#/ || $1 == "backend" { next }
      { k = $1 FS $5; st[f, k] = $6; med[f, k] = $7; if (f == 2) { ev[k] = $12; dr[k] = $13; note[k] = $14 }
        if (f == 1) keys[++n] = k }
      END {
        printf "%-11s %6s %11s %11s %10s %11s %8s %8s  %s\n", "backend", "seq", "off (ms)", "on (ms)", "overhead", "off spread", "events", "dropped", "verdict"
        for (i = 1; i <= n; i++) {
          k = keys[i]; split(k, p, FS)
          if (st[1, k] != "ok" || st[2, k] != "ok" || st[3, k] != "ok") {
            printf "%-11s %6s  not run: off %s, on %s, off %s (%s)\n", p[1], p[2], st[1, k], st[2, k], st[3, k], note[k]; continue }
          off = (med[1, k] + med[3, k]) / 2; on = med[2, k]
          ovh = (on - off) / off * 100; spread = (med[3, k] - med[1, k]) / off * 100
          verdict = off < 100e-6 ? "under 100 us, not judged" : (ovh < 5 ? "ok (< 5%)" : "OVER 5%")
          printf "%-11s %6s %11.4f %11.4f %9.2f%% %10.2f%% %8s %8s  %s\n", p[1], p[2], off * 1e3, on * 1e3, ovh, spread, ev[k], dr[k], verdict
        }
        print "off = mean of the medians of the two capture-off processes (before and after); off spread = second minus first;"
        print "events = CUPTI records of the point with capture on (prepare, warm-up and reps), dropped = records CUPTI dropped"
      }' "$LOGDIR/overhead_off.tsv" "$LOGDIR/overhead_on.tsv" "$LOGDIR/overhead_off2.tsv"
  fi
fi

if ((run_bench)); then
  section "AttnScope CUDA backends"
  timeout 240 "$BENCH" --seq "$seqs" --head-dim 64,128 --mask none,causal --dtype fp16,bf16 || status=1
  section "torch SDPA backends"
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    timeout 180 python3 "$ROOT/scripts/bench_torch_sdpa.py" --seq "$seqs" --head-dim 64,128 --mask none,causal --dtype fp16,bf16 || status=1
  else
    echo "python3 with a CUDA-enabled torch not found; torch table skipped"
  fi
fi
if ((run_explain)); then
  section "attnscope explain vs torch: predicted kernel and memory next to _fused_sdp_choice and max_memory_allocated"
  if [[ ! -x $BUILD/app/attnscope ]]; then
    echo "attnscope binary not built; explain check skipped"
  elif python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    explain_args=()
    [[ $seqs == 1024,4096 ]] && explain_args=(--quick)
    timeout 240 python3 "$ROOT/scripts/explain_gpu_check.py" --attnscope "$BUILD/app/attnscope" "${explain_args[@]}" || status=1
  else
    echo "python3 with a CUDA-enabled torch not found; explain check skipped"
  fi
fi
if ((run_explain)); then
  # The CPU releases' grid (tools/attnscope_explain_check, issue 20) on this GPU: every CUDA rule
  # and memory formula held against torch's own choice and the allocator's peaks, forward and
  # training, so the [src] rules become measured the first time a GPU is lent.
  section "explain grid on CUDA: attnscope_explain_check --device cuda (kernel and memory per case)"
  if [[ ! -x $BUILD/tools/attnscope_explain_check ]]; then
    echo "attnscope_explain_check not built; CUDA grid skipped"
  elif python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    timeout 300 "$BUILD/tools/attnscope_explain_check" --python python3 --device cuda --grid wide --show 80 \
        --markdown "$LOGDIR/explain-grid-cuda.md" --json "$LOGDIR/explain-grid-cuda.json" || status=1
  else
    echo "python3 with a CUDA-enabled torch not found; CUDA grid skipped"
  fi
fi
if ((run_explain)); then
  section "attnscope record: the classic report (heads 8 and 16, width 64, seq 10000, fp16, bool mask [1,1,L,L]) on this GPU"
  if [[ ! -x $BUILD/app/attnscope ]]; then
    echo "attnscope binary not built; record check skipped"
  elif python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    # torch's choice, the aten op that ran, measured (max_memory_allocated above the entry) and
    # predicted memory side by side, per call.
    timeout 300 "$BUILD/app/attnscope" record --db "$LOGDIR/record.sqlite" --python python3 --json -- \
        "$ROOT/examples/heads_cliff.py" --seq 10000 --device cuda > "$LOGDIR/record.json" || status=1
    python3 - "$LOGDIR/record.json" <<'PY' || status=1
import json, sys
text = open(sys.argv[1]).read()
rec = json.loads(text[text.index("\n{") + 1:] if "\n{" in text else text[text.index("{"):])
print("recorded on", rec.get("recorded_on"))
print("%-22s %-14s %-9s %-9s %-9s %14s %14s" % ("module", "q", "choice", "ran", "predicted", "measured", "predicted"))
for c in rec["calls"]:
    print("%-22s %-14s %-9s %-9s %-9s %14s %14s" % (c["module"], "x".join(map(str, c["q_shape"])), c["fused_choice"],
          c["torch_ran"], c["predicted_kernel"], c["measured_bytes"], c["predicted_bytes"]))
sys.exit(0 if all(c["agrees"] for c in rec["calls"]) else 1)
PY
  else
    echo "python3 with a CUDA-enabled torch not found; record check skipped"
  fi
fi
if ((run_explain)); then
  # Issue 23: a layer's heads over two ranks with torch.distributed and NCCL, one rank per GPU:
  # per-rank peak, time and communication share, and the float64 check of the joined result.
  section "tensor parallel: kind layer, tp 2 over NCCL (one rank per GPU)"
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  if [[ ! -x $BUILD/app/attnscope ]]; then
    echo "attnscope binary not built; tensor-parallel check skipped"
  elif ((gpus < 2)); then
    echo "this machine has ${gpus:-0} GPU(s): the 2-rank NCCL case needs two, so it is not run here"
  elif python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() and torch.distributed.is_nccl_available() else 1)' >/dev/null 2>&1; then
    for comm in allreduce gather; do
      timeout 300 "$BUILD/app/attnscope" run --db "$LOGDIR/tp.sqlite" --python python3 --kind layer --backend torch.cuda.auto \
          --tp 2 --tp-comm $comm --heads 16 --head-dim 128 --seq 4096 --dtype bf16 --pass train || status=1
    done
  else
    echo "python3 with a CUDA torch and NCCL not found; tensor-parallel check skipped"
  fi
fi
section "done (exit $status)"
exit $status
