#!/usr/bin/env python3
"""Runs the workspace's Rust test binaries, as `cargo test --workspace`
does, but several at a time: usage `scripts/run-tests.py [JOBS]` (default:
the number of CPUs).

`cargo test` runs one test binary after another, and many of ours spend
most of their time in one long test (a sweep, gcc compiling one large
file), so half of a 2-core machine idled through them. This builds every
test binary with `cargo test --workspace --no-run`, runs them JOBS at a
time (each in its package's directory, with the variables cargo sets),
longest first where the hint below knows, prints each binary's output
when it ends, then runs the doc tests with cargo. Exits 1 when any test
binary fails, naming each.
"""

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

# Binaries known to run longest (a minute or more on 2 cores), started
# first so that none of them is left to run alone at the end.
LONG_FIRST = ["emit_prelude", "prelude_sweep", "onnx_run", "filetests", "rules", "opt",
              "random_compiled", "optimize_cache", "testkit", "fixtures", "emit_fuzz"]


def binaries():
    """(name, executable, package directory) of every test binary, from
    cargo's build messages."""
    cmd = ["cargo", "test", "--workspace", "--no-run", "--message-format=json-render-diagnostics"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        print("error: the test binaries did not build (cargo's messages above)", file=sys.stderr)
        sys.exit(1)
    out = p.stdout
    found = []
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not msg["profile"]["test"]:
            continue
        pkg_dir = os.path.dirname(msg["manifest_path"])
        found.append((msg["target"]["name"], msg["executable"], pkg_dir))
    return found


def run(binary):
    _, exe, pkg_dir = binary
    env = dict(os.environ, CARGO_MANIFEST_DIR=pkg_dir)
    start = time.monotonic()
    p = subprocess.run([exe], cwd=pkg_dir, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return binary, p.returncode, p.stdout, time.monotonic() - start


def main():
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else os.cpu_count() or 1
    todo = binaries()
    rank = {n: i for i, n in enumerate(LONG_FIRST)}
    todo.sort(key=lambda b: rank.get(b[0], len(LONG_FIRST)))
    failed = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for done in as_completed([pool.submit(run, b) for b in todo]):
            (name, exe, _), code, out, secs = done.result()
            print(f"     Running {name} ({os.path.relpath(exe)}), {secs:.1f} s", flush=True)
            print(out, flush=True)
            if code != 0:
                failed.append(name)
    doc = subprocess.run(["cargo", "test", "--workspace", "--doc"])
    if doc.returncode != 0:
        failed.append("doc tests")
    if failed:
        print(f"error: test binaries failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    print(f"all {len(todo)} test binaries and the doc tests passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
