#!/usr/bin/env bash
# Run HERE (the development machine), before a device session: copies the build dependencies
# that the GPU machine's image lacks into .gpu-deps/ (git-ignored), which the device tool then
# carries (carry [".gpu-deps"]) and scripts/gpu-check.sh uses. The GPU machine has nvcc, CMake,
# ninja and python3+torch but none of Debian's -dev packages, and no network.
#
#   scripts/gpu-prepare.sh [--out DIR]      (default: <repo>/.gpu-deps)
#
# What it bundles, laid out as an install prefix (the CMake config files stay relocatable):
#   include/                 sqlite3.h sqlite3ext.h nlohmann/ gtest/ gmock/
#   lib/<multiarch>/         libsqlite3.a libgtest.a libgtest_main.a libgmock.a libgmock_main.a
#   lib/<multiarch>/cmake/GTest/   GoogleTest's CMake package (GTest::gtest, GTest::gmock, ...)
#   share/cmake/nlohmann_json/     nlohmann_json's CMake package (header-only)
#   src/googletest/          GoogleTest's sources: gpu-check.sh builds them there if the
#                            prebuilt static libraries do not link with that machine's compiler
#   MANIFEST.txt             package versions, compiler and glibc they were built with
# Static libraries only, so nothing from .gpu-deps is needed at run time. OpenBLAS is not
# bundled: the GPU build uses -DATTNSCOPE_CPU_BLAS=none (the CPU backends are not measured there).
# Source packages (Debian/Ubuntu): libsqlite3-dev nlohmann-json3-dev libgtest-dev libgmock-dev googletest.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$ROOT/.gpu-deps
while (($#)); do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "gpu-prepare: unknown argument $1" >&2; exit 2 ;;
  esac
done

MA=$(gcc -print-multiarch 2>/dev/null || true)
[[ -n $MA ]] || MA=x86_64-linux-gnu
LIBDIR=/usr/lib/$MA

missing=()
need() { [[ -e $1 ]] || missing+=("$1 (apt install $2)"); }
need /usr/include/sqlite3.h libsqlite3-dev
need "$LIBDIR/libsqlite3.a" libsqlite3-dev
need /usr/include/nlohmann/json.hpp nlohmann-json3-dev
need /usr/share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake nlohmann-json3-dev
need /usr/include/gtest/gtest.h libgtest-dev
need "$LIBDIR/libgtest.a" libgtest-dev
need "$LIBDIR/cmake/GTest/GTestConfig.cmake" libgtest-dev
need /usr/include/gmock/gmock.h libgmock-dev
need "$LIBDIR/libgmock.a" libgmock-dev
if ((${#missing[@]})); then
  printf 'gpu-prepare: missing on this machine:\n' >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi

rm -rf "$OUT"
mkdir -p "$OUT/include" "$OUT/lib/$MA/cmake" "$OUT/share/cmake" "$OUT/src"

# SQLite: header and the static library (the .a needs only libc, libm, libdl, libpthread).
cp -a /usr/include/sqlite3.h /usr/include/sqlite3ext.h "$OUT/include/"
cp -a "$LIBDIR/libsqlite3.a" "$OUT/lib/$MA/"

# nlohmann_json: header-only, and its CMake package (computes its prefix from its own location).
cp -a /usr/include/nlohmann "$OUT/include/"
cp -a /usr/share/cmake/nlohmann_json "$OUT/share/cmake/"

# GoogleTest and GMock: headers, static libraries, the GTest CMake package (relocatable: it
# walks four folders up from lib/<multiarch>/cmake/GTest to find the prefix).
cp -a /usr/include/gtest /usr/include/gmock "$OUT/include/"
cp -a "$LIBDIR"/libgtest.a "$LIBDIR"/libgtest_main.a "$LIBDIR"/libgmock.a "$LIBDIR"/libgmock_main.a "$OUT/lib/$MA/"
cp -a "$LIBDIR/cmake/GTest" "$OUT/lib/$MA/cmake/"
# Sources for a rebuild on the GPU machine, should its compiler not link the prebuilt ones.
if [[ -f /usr/src/googletest/CMakeLists.txt ]]; then
  cp -a /usr/src/googletest "$OUT/src/"
  rm -rf "$OUT/src/googletest/googletest/docs" "$OUT/src/googletest/googlemock/docs" 2>/dev/null || true
fi

{
  echo "AttnScope GPU build dependencies, made by scripts/gpu-prepare.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(uname -m), multiarch $MA"
  echo "compiler: $(gcc --version | head -n1)"
  echo "glibc: $(ldd --version 2>/dev/null | head -n1)"
  echo "packages:"
  dpkg-query -W -f='  ${Package} ${Version}\n' libsqlite3-dev nlohmann-json3-dev libgtest-dev libgmock-dev googletest 2>/dev/null || true
  echo "multiarch=$MA"
} >"$OUT/MANIFEST.txt"

# The folder must stay out of git (it travels only through the device tool's carry).
if ! git -C "$ROOT" check-ignore -q "$OUT/MANIFEST.txt" 2>/dev/null; then
  echo "gpu-prepare: warning: $OUT is not ignored by git; add /.gpu-deps/ to .gitignore" >&2
fi

size_kib=$(du -sk "$OUT" | cut -f1)
echo "gpu-prepare: wrote $OUT ($(du -sh "$OUT" | cut -f1), $(find "$OUT" -type f | wc -l) files)"
sed -n '1,20p' "$OUT/MANIFEST.txt" | sed 's/^/  /'
if ((size_kib > 30 * 1024)); then
  echo "gpu-prepare: $OUT is over 30 MiB; the device tool carries 64 MiB with the working tree" >&2
  exit 1
fi
echo "next: the device tool's run with command 'bash scripts/gpu-check.sh', carry [\".gpu-deps\"] (see scripts/gpu-check.sh)"
