"""Run ``ratchet demo team`` N times, each in a fresh temporary directory, and count the exits.

The team demo kills its first worker at a moment it picks by watching the
ledger, so one run proves little about the races around that moment: this
loop runs it many times and prints ``K/N exited 0``, then each failure (its
run number, exit code and the demo's last lines). It is slow (about ten
seconds a run), so it is run by hand, never in CI:

    nice -n 10 python bench/demo_team_loop.py            # 100 runs
    nice -n 10 python bench/demo_team_loop.py --runs 20 --keep-failures

Exit code: 0 when every run exited 0, 1 otherwise.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TIMEOUT = 120.0  # a run that takes this long is stuck: counted as a failure
TAIL_LINES = 6


def run_once(directory: Path) -> tuple[int, str]:
    """One ``ratchet demo team`` with its store in `directory`: its exit code and its output."""
    argv = [sys.executable, "-m", "ratchet", "demo", "team", "--store", f"sqlite:///{directory}/demo.db"]
    try:
        done = subprocess.run(
            argv, cwd=directory, capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout.decode("utf-8", "replace") if isinstance(expired.stdout, bytes) else ""
        return -1, out + f"\n(no exit within {TIMEOUT:g} s)"
    return done.returncode, done.stdout + done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100, help="how many runs (default 100)")
    parser.add_argument(
        "--keep-failures", action="store_true", help="keep a failed run's directory to look at"
    )
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be 1 or more")
    failures: list[tuple[int, int, str, Path | None]] = []
    began = time.monotonic()
    for number in range(1, args.runs + 1):
        directory = Path(tempfile.mkdtemp(prefix="ratchet-demo-team-loop-")).resolve()
        code, output = run_once(directory)
        kept = None
        if code != 0 and args.keep_failures:
            kept = directory
        else:
            shutil.rmtree(directory, ignore_errors=True)
        if code != 0:
            failures.append((number, code, output, kept))
        print(f"run {number}: exit {code}", flush=True)
    elapsed = time.monotonic() - began
    passed = args.runs - len(failures)
    print(f"{passed}/{args.runs} exited 0 ({elapsed:.0f} s, {elapsed / args.runs:.1f} s a run)")
    for number, code, output, kept in failures:
        print(f"--- run {number}: exit {code}" + (f", files in {kept}" if kept else ""))
        print("\n".join(output.rstrip().splitlines()[-TAIL_LINES:]))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
