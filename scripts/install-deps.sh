#!/usr/bin/env bash
# Installs what AttnScope needs to build and test on Debian 12 / Ubuntu 22.04+, from the
# distribution's packages only. Idempotent: installs nothing when everything is present.
# The CUDA toolkit is not installed here; where nvcc exists (/usr/local/cuda), the CUDA backends
# and CUPTI capture are built too.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ccache
  libsqlite3-dev nlohmann-json3-dev libopenblas-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  qt6-base-dev qt6-svg-dev libqcustomplot-dev libgl1-mesa-dev
  xvfb xauth
  poppler-utils  # pdftotext and pdftoppm: the report's text read back in tests, its pages as images
  python3 python3-venv
  clang llvm  # the fuzz stage: libFuzzer, sanitizer runtimes, llvm-symbolizer
)

# libFuzzer and the sanitizer runtimes: their own package on Debian 12 (only recommended by
# clang), part of libclang-common on older Ubuntu.
if apt-cache show libclang-rt-dev >/dev/null 2>&1; then packages+=(libclang-rt-dev); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
