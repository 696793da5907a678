#!/usr/bin/env python3
"""Prints the releases table of docs/TORCH_RELEASES.md from the JSON files that
scripts/measure_torch_release.sh writes (build/explain-releases/torch-X.Y.Z.json):

  python3 scripts/release-table.py [DIR]      # DIR defaults to build/explain-releases
"""
import json
import pathlib
import sys


def key(path):
    version = path.stem.split("-", 1)[1]
    return tuple(int(x) for x in version.split("+")[0].split("."))


def main():
    folder = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build/explain-releases")
    files = sorted(folder.glob("torch-*.json"), key=key)
    if not files:
        print("release-table: no torch-*.json in %s (run scripts/measure_torch_release.sh first)" % folder, file=sys.stderr)
        return 1
    print("| torch | measured | cases | kernel agrees | memory agrees | largest difference (B) |")
    print("|---|---|---:|---:|---:|---:|")
    for f in files:
        r = json.loads(f.read_text())
        print("| %s | %s | %d | %d | %d | %d |" % (r["torch"].split("+")[0], r["date"], r["cases"], r["kernel_ok"],
                                                 r["memory_ok"], r["worst_bytes"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
