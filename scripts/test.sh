#!/usr/bin/env bash
# Installs what is missing, then builds and tests:
#   1. cpu-only: ATTNSCOPE_CUDA=OFF, every test;
#   2. default: CUDA when a toolkit is found, GUI on, every test (GPU tests, ctest label gpu, skip
#      with a message when no device is present);
#   3. asan: the suite without CUDA and GUI under ASan+UBSan, stopping at the first report;
#   4. tsan: the concurrency tests (ctest label tsan) under ThreadSanitizer;
#   5. fuzz: each libFuzzer target in fuzz/ for FUZZ_SECONDS (default 45) from its seed corpus;
#      any crash, leak or sanitizer report fails;
#   6. releases: `explain` held against real torch releases on the CPU
#      (scripts/measure_torch_release.sh, the wide grid), for TORCH_RELEASES (default 2.3.1 and
#      2.9.1: between them most of the CPU rule changes; 2.15 is the default stage's own torch);
#      any case that disagrees fails.
# A real one-node Slurm (scripts/slurm-local.sh: slurmctld, slurmd, slurmdbd with MariaDB) runs for
# the whole script, so the tests labelled slurm (sweep --slurm --wait, two partitions, scancel and
# resume, Ctrl-C while following, the window following a submission) run against it in the default
# stage; ATTNSCOPE_REQUIRE_SLURM turns their skip into a failure. The cpu-only and asan stages leave
# them out (they wait on the scheduler, a minute and a half each time, and test nothing that CUDA or
# ASan changes: the merge they drive runs under ASan in test_store_merge). SLURM=off leaves the
# cluster out (the slurm tests then skip with a message).
# STAGES="cpu-only default releases asan tsan fuzz" picks stages; timings: docs/RELIABILITY.md.
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

STAGES=${STAGES:-cpu-only default releases asan tsan fuzz}
if [ "${SLURM:-on}" != off ]; then
  echo "=== slurm: start a one-node cluster (scripts/slurm-local.sh)"
  eval "$(bash scripts/slurm-local.sh start)"
  trap 'bash scripts/slurm-local.sh stop >/dev/null 2>&1 || true' EXIT
  export ATTNSCOPE_REQUIRE_SLURM=1
fi
TORCH_RELEASES=${TORCH_RELEASES:-2.3.1 2.9.1}
FUZZ_SECONDS=${FUZZ_SECONDS:-45}

stage_start() {
  STAGE_T0=$(date +%s)
  echo "=== $1"
}
stage_end() { echo "=== $1: done in $(($(date +%s) - STAGE_T0)) s"; }

plain_config() {
  local config=$1 dir=build/test-$1 cuda=AUTO
  [ "$config" = cpu-only ] && cuda=OFF
  stage_start "$config: configure (ATTNSCOPE_CUDA=$cuda)"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNSCOPE_CUDA=$cuda
  echo "=== $config: build"
  cmake --build "$dir" -j "$JOBS"
  echo "=== $config: test"
  local skip=()
  [ "$config" = cpu-only ] && skip=(-LE slurm)
  ctest --test-dir "$dir" --output-on-failure -j 2 "${skip[@]}"
  stage_end "$config"
}

# Every test the asan preset builds (core, CPU backends, store, trace, CLI, the torch bridge); a
# sanitizer report ends the test with an error, which fails the stage. test_explain_torch is left
# to the plain stages: it spends minutes in an uninstrumented Python asking torch for 170 choices,
# and the explainer's own code runs under ASan in test_explain_rules and the CLI tests.
asan_stage() {
  local dir=build/test-asan
  stage_start "asan: configure, build, test (ASan+UBSan)"
  cmake --preset asan -B "$dir" -DATTNSCOPE_BENCH=OFF >/dev/null
  cmake --build "$dir" -j "$JOBS"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir "$dir" --output-on-failure -j 2 -E '^test_explain_torch$' -LE slurm
  stage_end asan
}

# Only the tests labelled tsan (threads sharing a store, the sweep runner and the CPU thread
# pool under cancellation), and only their executables are built.
tsan_stage() {
  local dir=build/test-tsan
  stage_start "tsan: configure, build, test (ThreadSanitizer, ctest -L tsan)"
  cmake --preset tsan -B "$dir" >/dev/null
  cmake --build "$dir" -j "$JOBS" --target tsan_tests
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --test-dir "$dir" --output-on-failure -L tsan
  stage_end tsan
}

# Each fuzzer runs from its checked-in seeds (read only) plus a scratch corpus it may grow.
# libFuzzer exits non-zero on a crash, a leak, a timeout, an out-of-memory or a sanitizer report
# and leaves the input in build/test-fuzz/artifacts/ for `fuzz_X ARTIFACT` to replay.
fuzz_stage() {
  local dir=build/test-fuzz
  if ! command -v clang++ >/dev/null 2>&1; then
    echo "fuzz: clang++ not found (install-deps installs clang)" >&2
    return 1
  fi
  stage_start "fuzz: configure, build (clang, libFuzzer, ASan+UBSan)"
  cmake --preset fuzz -B "$dir" >/dev/null
  cmake --build "$dir" -j "$JOBS" --target fuzzers
  mkdir -p "$dir/artifacts"
  for target in fuzz_spec fuzz_cli_args fuzz_npy fuzz_store; do
    echo "=== fuzz: $target for ${FUZZ_SECONDS} s"
    rm -rf "$dir/corpus/$target"
    mkdir -p "$dir/corpus/$target"
    local dict=()
    [ -f "fuzz/dict/$target.dict" ] && dict=(-dict="fuzz/dict/$target.dict")
    if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
      "$dir/fuzz/$target" -max_total_time="$FUZZ_SECONDS" -timeout=20 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$dir/artifacts/$target-" "${dict[@]}" \
        "$dir/corpus/$target" "fuzz/corpus/$target" > "$dir/$target.log" 2>&1; then
      tail -n 60 "$dir/$target.log"
      echo "fuzz: $target found a defect; input saved under $dir/artifacts/" >&2
      return 1
    fi
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|Done [0-9]+ runs" "$dir/$target.log" || true
  done
  stage_end fuzz
}

# Uses the default stage's build (configured and built here when that stage did not run).
releases_stage() {
  stage_start "releases: explain against torch $TORCH_RELEASES on the CPU"
  local r
  for r in $TORCH_RELEASES; do
    echo "=== releases: torch $r"
    JOBS=$JOBS ATTNSCOPE_BUILD=build/test-default bash scripts/measure_torch_release.sh "$r" --show 60
  done
  stage_end releases
}

for stage in $STAGES; do
  case $stage in
    cpu-only | default) plain_config "$stage" ;;
    asan) asan_stage ;;
    tsan) tsan_stage ;;
    fuzz) fuzz_stage ;;
    releases) releases_stage ;;
    *) echo "unknown stage '$stage' (allowed: cpu-only default releases asan tsan fuzz)" >&2; exit 2 ;;
  esac
done
