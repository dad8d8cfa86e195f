"""The README's first Python block is a script a new reader pastes into a file and runs.

Exactly that block, saved as a file in an empty directory, run by ``python``
with the core alone (none of the extras' libraries importable), no API key,
and no Ratchet settings in the environment, as on a fresh machine: it exits
0 and shows the task waiting for the approval, then completed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from pytest_examples import find_examples

from ..helpers.core_install import core_install_env

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_first_python_block_runs_as_a_script_on_the_core_install(tmp_path: Path) -> None:
    first = next(iter(find_examples(README)))
    project = tmp_path / "project"
    project.mkdir()
    (project / "checkout.py").write_text(first.source)
    # Nothing of the tests' own setup (their signing key, the code they admit): a fresh user's
    # environment, whose state and configuration directories are this test's.
    env = {name: value for name, value in os.environ.items() if not name.startswith("RATCHET_")}
    env |= {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env = core_install_env(env, tmp_path)

    done = subprocess.run(
        [sys.executable, "checkout.py"], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    waiting, completed = done.stdout.splitlines()
    task = waiting.split()[0]
    assert re.fullmatch(r"checkout-[0-9a-f]{8}", task)
    assert waiting == f"{task} waiting approval"
    assert completed == f"{task} completed {{'charged': 5, 'key': '{task}:0'}}"
    assert (project / "ratchet.db").is_file()
