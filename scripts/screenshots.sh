#!/usr/bin/env bash
# Renders the main views of the desktop application offscreen into docs/screenshots/*.png:
# builds a sample database with the real CPU backends (a heads x seq sweep at fixed model width
# 64, with a per-head boolean mask and with a causal mask), opens the main window on it and
# grabs each tab; also a 300 DPI export and the PDF report with its pages as PNGs. No display
# needed.
#
# Usage: scripts/screenshots.sh [BUILD_DIR]   (default: build; configured if missing)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
if [ ! -f "$build/build.ninja" ] && [ ! -f "$build/Makefile" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$build" --target attnscope_screenshots
export QT_QPA_PLATFORM=offscreen
"$build/ui/attnscope_screenshots" "$root/docs/screenshots"
# The report's pages as images, to look at and for the README (poppler-utils' pdftoppm).
if command -v pdftoppm >/dev/null; then
  rm -f "$root"/docs/screenshots/report-page-*.png
  pdftoppm -r 70 -png "$root/docs/screenshots/report.pdf" "$root/docs/screenshots/report-page"
else
  echo "pdftoppm not found: report pages not rendered (apt-get install poppler-utils)" >&2
fi
