#!/usr/bin/env bash
# Installs what is missing, builds AttnScope and runs it: the desktop application where there is
# a display; elsewhere a default CPU sweep whose table is printed, saved to the default database,
# and rendered as PNG charts plus a PDF report in out/report-<time>/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
source scripts/env.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNSCOPE_TESTS=OFF -DATTNSCOPE_BENCH=OFF
cmake --build build/release -j "$JOBS"
app=build/release/app/attnscope

if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec "$app" "$@"
fi

echo "No display: running the default CPU sweep (peak memory vs heads and sequence length)."
log=$(mktemp)
"$app" sweep --name "default CPU sweep" --backends cpu.reference,cpu.flash \
  --heads 2,4,8,16 --seq 256,512,1024,2048 --head-dim 64 --reps 2 | tee "$log"
id=$(sed -n "s/^sweep \(S[0-9]*\) .*/\1/p" "$log" | head -n 1)
rm -f "$log"
out="out/report-$(date +%Y%m%d-%H%M%S)"
QT_QPA_PLATFORM=offscreen "$app" report "$id" --out "$out"
echo "Charts and report.pdf for sweep $id are in $out/"
