"""Every Python block of README.md and docs/ runs, so the docs cannot drift from the code.

The blocks are found by pytest-examples (pydantic's plugin, as pydantic-ai
tests its docs). A block fenced ```` ```python ```` is a script: the test
saves it in a fresh temporary directory (the block's project root and
current directory) and runs it there as ``python FILE.py`` would, in this
process. So a block is complete: it imports what it uses, and runs its
coroutines with ``asyncio.run``, under ``if __name__ == "__main__":`` when
the file defines a workflow or tools (a worker that resumes the task imports
the file again for its code, which must not start the program a second
time).

A block that is not a whole program says so in its fence's info string,
which GitHub does not show:

- ```` ```python {test="fragment"} ````: a part of a program (a call inside a
  workflow, a signature, the next lines of the block above). It is only
  compiled, with ``await`` allowed at the top level: a fragment still has to
  be Python.

No block is skipped: one whose model the scripted model cannot stand in for
uses its framework's offline model (pydantic-ai's ``"test"``) and says in a
comment which real model to put there.

A block that sets what a process sets only once (OpenTelemetry's tracer
provider) is fenced ```` ```python {test="subprocess"} ````: it runs as
``python FILE.py`` in a process of its own, with nothing scripted.

A block's model calls are answered by the scripted model, Ratchet's fake
model: ``openai:``, ``anthropic:``, ``ollama:`` and ``litellm:`` models are
built, while a block runs, as a `ScriptedModel` whose script plans one step
and then answers "done" (`SCRIPT`). No block that runs needs an API key or the
network.

A program a block starts by name (``ratchet mcp``) is the one installed
beside the Python running the tests.

The README's first block is also run as a real ``python`` program with
none of the extras installed (test_readme_script.py): it is the one a new
reader pastes first.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_examples import CodeExample, find_examples

from ratchet.providers import registry
from ratchet.providers.scripted import ScriptedModel

from ..helpers.scripts import plan

REPO = Path(__file__).resolve().parents[2]

# The providers that would reach a server; a block's calls go to the scripted model instead.
NETWORK_PROVIDERS = ("openai", "anthropic", "ollama", "litellm")

# A script any agent (or chat turn) completes with: one planned step, then "done" to each act, a
# pass to each check, a summary to each summary asked; more of each than a block's task asks for.
ANSWERS = 8
SCRIPT = {
    "plan": [plan("answer", goal="the instruction is carried out")],
    "act": [{"content": "done"}] * ANSWERS,
    "verify": [{"content": {"passed": True, "reason": "it is done"}}] * ANSWERS,
    "summarize": [{"content": "Summary of the earlier messages."}] * ANSWERS,
}


# Each block, named by its doc and the line of its fence.
EXAMPLES = [
    pytest.param(example, id=f"{example.path.relative_to(REPO)}:{example.start_line}")
    for example in find_examples(REPO / "README.md", REPO / "docs")
]


def _mark(example: CodeExample) -> str:
    """The block's ``test`` setting as written (pytest-examples gives the info string lower-cased)."""
    fence = example.path.read_text(encoding="utf-8").splitlines()[example.start_line - 1]
    found = re.search(r'\btest="([^"]*)"', fence)
    return found.group(1) if found else ""


def _compiled(example: CodeExample, *, top_level_await: bool) -> types.CodeType:
    """The block compiled under the name of its doc, its lines numbered as there."""
    # Blank lines before the block make a traceback's line number the line in the doc.
    source = "\n" * example.start_line + example.source
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if top_level_await else 0
    # compile() with flags is typed as returning Any; with "exec" it is always a code object.
    code: types.CodeType = compile(source, str(example.path), "exec", flags=flags, dont_inherit=True)
    return code


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh project root and current directory, with the network's providers scripted."""
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    for name in ("RATCHET_STORE", "RATCHET_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    # A block may register providers (docs/providers.md): it does so on a copy, which goes with it.
    providers = dict(registry._providers)
    for prefix in NETWORK_PROVIDERS:
        providers[prefix] = lambda _name, **_endpoint: ScriptedModel(script)
    monkeypatch.setattr(registry, "_providers", providers)
    modules = set(sys.modules)
    yield root
    # The block's own module, loaded again by the runner for its code, goes with the block.
    for name in set(sys.modules) - modules:
        if Path(getattr(sys.modules[name], "__file__", None) or "/").is_relative_to(root):
            del sys.modules[name]


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_block_runs(example: CodeExample, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marked = _mark(example)
    if marked == "fragment":
        _compiled(example, top_level_await=True)
        return
    assert marked in ("", "subprocess"), f'{example}: {{test="{marked}"}} is not a mark the tests know'

    code = _compiled(example, top_level_await=False)
    path = project / f"{example.path.stem}_{example.start_line}.py"
    path.write_text(example.source)
    if marked == "subprocess":
        done = subprocess.run([sys.executable, path.name], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return
    main = types.ModuleType("__main__")
    main.__file__ = str(path)
    monkeypatch.setitem(sys.modules, "__main__", main)
    exec(code, main.__dict__)
