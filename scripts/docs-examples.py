#!/usr/bin/env python3
"""The command outputs shown in the docs, produced by running them.

Every example in README.md and docs/*.md is a marked block:

    <!-- example
    setup: attnscope sweep --shard 0/3 ... --db s0.sqlite
    run: attnscope merge s0.sqlite s1.sqlite --into all.sqlite
    run: attnscope show R11  #keep 1-12
    needs: torch
    check: first-last
    -->
    ```console
    $ attnscope merge ...
    (its output)
    ```
    <!-- /example -->

`setup:` lines run first, silently; each `run:` line is printed as `$ CMD` followed by what it
wrote (stdout and stderr together). `#keep A-B,C` keeps those lines of a command's output (1 is
the first; `A-` to the end; `/RE/-` from the first line matching RE), the gaps shown as `...`. `needs: torch` runs only where a Python with torch is given
(--python, else $ATTNSCOPE_TEST_PYTHON or $ATTNSCOPE_PYTHON), `needs: slurm` only where `sinfo`
answers. `check: first-last` compares only the first and last line of each command's output
(a Slurm job's progress lines depend on the scheduler's timing).

Each example runs in a fresh folder, which is also HOME (so the default database is new) and
shows as `~`; `attnscope` is the build's binary, shown as /usr/local/bin/attnscope where its path
appears; examples/ is the checkout's.

usage: docs-examples.py --attnscope BIN (--write | --check) [--python PY] [FILE ...]
  --write  regenerates every block in place
  --check  runs every example and compares its output with the block by shape: numbers, times,
           UUIDs and column spacing may differ, the lines, words and fields may not. Exit 1 on
           any difference, naming the file, the example and the first differing line.
"""

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
MARK = re.compile(r"<!-- example\n(?P<spec>.*?)-->\n(?P<body>.*?)<!-- /example -->", re.S)
TIMEOUT_S = 900


class Example:
    def __init__(self, spec_text):
        self.setup, self.runs, self.needs, self.check = [], [], set(), "all"
        for raw in spec_text.splitlines():
            line = raw.strip()
            if not line:
                continue
            key, _, value = line.partition(":")
            value = value.strip()
            if key == "setup":
                self.setup.append(value)
            elif key == "run":
                command, _, keep = value.partition("#keep")
                self.runs.append((command.strip(), keep.strip()))
            elif key == "needs":
                self.needs.update(v.strip() for v in value.split(","))
            elif key == "check":
                if value not in ("all", "first-last"):
                    raise SystemExit(f"check: {value!r}: use all or first-last")
                self.check = value
            else:
                raise SystemExit(f"unknown example key {key!r} in: {raw}")
        if not self.runs:
            raise SystemExit("an example without a run: line")

    def title(self):
        return self.runs[0][0][:80]


def keep_lines(lines, keep):
    """The lines `keep` names: `3`, `3-9`, `12-` (to the end), `/^phase/-` (from the first line
    matching the pattern to the end) or `/^a/-/^b/` (up to and with the first match of b after it);
    the gaps become `...`."""
    if not keep:
        return lines
    wanted = set()
    for part in keep.split(","):
        m = re.fullmatch(r"(?:(\d+)|/(.+?)/)(?:(-)(?:(\d+)|/(.+?)/)?)?", part.strip())
        if not m:
            raise SystemExit(f"#keep {keep!r}: {part!r} is not N, N-M, N-, /RE/- or /RE/-/RE/")
        n_lo, re_lo, dash, n_hi, re_hi = m.groups()
        if n_lo:
            lo = int(n_lo)
        else:
            lo = next((i for i, line in enumerate(lines, 1) if re.search(re_lo, line)), None)
            if lo is None:
                raise RuntimeError(f"#keep: no line matches /{re_lo}/")
        if not dash:
            hi = lo
        elif n_hi:
            hi = int(n_hi)
        elif re_hi:
            hi = next((i for i, line in enumerate(lines, 1) if i > lo and re.search(re_hi, line)), len(lines))
        else:
            hi = len(lines)
        wanted.update(range(lo, hi + 1))
    out, gap = [], False
    for i, line in enumerate(lines, 1):
        if i in wanted:
            out.append(line)
            gap = False
        elif not gap:
            out.append("...")
            gap = True
    return out


def shell(command, cwd, env):
    p = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=TIMEOUT_S)
    if p.returncode < 0 or p.returncode >= 124:
        raise RuntimeError(f"`{command}` ended with status {p.returncode}:\n{p.stdout.decode(errors='replace')}")
    return p.stdout.decode(errors="replace")


def run_example(ex, binary, python):
    """[(command, output lines)] for each run: line."""
    bindir = str(pathlib.Path(binary).resolve().parent)
    with tempfile.TemporaryDirectory(prefix="attnscope-docs-") as tmp:
        tmp = os.path.realpath(tmp)
        os.symlink(ROOT / "examples", os.path.join(tmp, "examples"))
        env = dict(os.environ)
        env["HOME"] = tmp
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
        for name in ("ATTNSCOPE_DB", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            env.pop(name, None)
        env["COLUMNS"] = "400"
        # Only an example that needs torch sees it: the others print the same wherever they run.
        env.pop("ATTNSCOPE_PYTHON", None)
        if python and "torch" in ex.needs:
            env["ATTNSCOPE_PYTHON"] = python
        for command in ex.setup:
            shell(command, tmp, env)
        out = []
        for command, keep in ex.runs:
            text = shell(command, tmp, env).replace(tmp, "~").replace(bindir + "/attnscope", "/usr/local/bin/attnscope")
            lines = text.rstrip("\n").split("\n")
            out.append((command, keep_lines([line.rstrip() for line in lines], keep)))
        return out


def render(results):
    body = ["```console"]
    for command, lines in results:
        body.append("$ " + command)
        body.extend(lines)
    body.append("```")
    return "\n".join(body) + "\n"


UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
HEX8 = re.compile(r"\b[0-9a-f]{8}\b")
NUMBER = re.compile(r"[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?")
TIME = re.compile(r"N ?(ns|µs|us|ms|s)\b")
SIZE = re.compile(r"N ?(B|KiB|MiB|GiB|TiB|kB|MB|GB)\b")


def shape(line):
    """A line with what may change between runs taken out: numbers, units of time, ids, spacing."""
    line = UUID.sub("U", line)
    line = HEX8.sub("H", line)
    line = NUMBER.sub("N", line)
    line = TIME.sub("T", line)
    line = SIZE.sub("S", line)
    line = re.sub(r"(N[:.]?)+", "N", line)
    # --check auto holds every row when the full check costs no more than the run took, so how
    # much a run's check covered follows the machine's speed (core/check/check_policy.h).
    line = re.sub(r"ok, checked N % of rows", "ok", line)
    line = re.sub(r"\(checked N % of rows;|\(every row;", "(CHECKED;", line)
    line = re.sub(r" ?\(N not every row checked\)", "", line)
    line = re.sub(r"-{2,}", "-", line)
    return re.sub(r"\s+", " ", line).strip()


def blocks_of(body):
    """The doc's block split per `$ ` command: [(command, lines)]."""
    out = []
    for line in body.strip("\n").split("\n"):
        if line.startswith("```"):
            continue
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


def compare(ex, shown, fresh):
    if [c for c, _ in shown] != [c for c, _ in fresh]:
        return f"the commands differ: shown {[c for c, _ in shown]}, run {[c for c, _ in fresh]}"
    for (command, a), (_, b) in zip(shown, fresh):
        if ex.check == "first-last":
            a, b = [a[0], a[-1]] if a else [], [b[0], b[-1]] if b else []
        sa, sb = [shape(x) for x in a], [shape(x) for x in b]
        if sa == sb:
            continue
        for i in range(max(len(sa), len(sb))):
            x = a[i] if i < len(a) else "(no line)"
            y = b[i] if i < len(b) else "(no line)"
            if i >= len(sa) or i >= len(sb) or sa[i] != sb[i]:
                return f"`{command}`, line {i + 1}:\n  shown: {x}\n  now:   {y}"
    return None


def have_slurm():
    return shutil.which("sinfo") is not None and subprocess.run(
        ["sinfo", "-h"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attnscope", required=True)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    ap.add_argument("--python", default=os.environ.get("ATTNSCOPE_TEST_PYTHON") or os.environ.get("ATTNSCOPE_PYTHON"))
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    files = [pathlib.Path(f) for f in args.files] or [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    slurm = have_slurm()
    failures, ran, skipped = [], 0, 0
    for path in files:
        text = path.read_text()
        pieces, last = [], 0
        for m in MARK.finditer(text):
            ex = Example(m.group("spec"))
            missing = [n for n in sorted(ex.needs) if (n == "torch" and not args.python) or (n == "slurm" and not slurm)]
            body = m.group("body")
            if missing:
                print(f"skipped {path.name}: {ex.title()} (needs {', '.join(missing)})")
                skipped += 1
            else:
                fresh = run_example(ex, args.attnscope, args.python)
                ran += 1
                if args.write:
                    body = render(fresh)
                    print(f"wrote {path.name}: {ex.title()}")
                else:
                    why = compare(ex, blocks_of(body), fresh)
                    print(f"{'DIFFERS' if why else 'ok'} {path.name}: {ex.title()}")
                    if why:
                        failures.append(f"{path.name}: {why}")
            pieces.append(text[last:m.start("body")] + body)
            last = m.end("body")
        pieces.append(text[last:])
        if args.write:
            path.write_text("".join(pieces))
    print(f"{ran} examples run, {skipped} skipped, {len(failures)} differ")
    for f in failures:
        print(f, file=sys.stderr)
    if args.check and ran == 0:
        print("no example ran", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
