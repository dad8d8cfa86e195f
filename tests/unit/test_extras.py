"""The core install needs no extra: the model SDKs and psycopg are loaded only when asked for.

Each program runs in a child Python that finds none of the extras' libraries
(tests/helpers/core_install.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers.core_install import EXTRA_LIBRARIES, core_install_env


def _python(args: list[str], cwd: Path, *, without_extras: bool) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("RATCHET_STORE", None)
    if without_extras:
        env = core_install_env(env, cwd)
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_blocker_hides_the_libraries(tmp_path: Path) -> None:
    done = _python(["-c", "import anthropic"], tmp_path, without_extras=True)
    assert done.returncode == 1
    assert "ModuleNotFoundError: No module named 'anthropic'" in done.stderr


def test_import_ratchet_and_the_cli_help_load_no_extra(tmp_path: Path) -> None:
    program = (
        "import sys, ratchet, ratchet.cli\n"
        "try:\n"
        "    ratchet.cli.main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in sys.modules if m.partition('.')[0] in {EXTRA_LIBRARIES!r}))\n"
    )
    done = _python(["-c", program], tmp_path, without_extras=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    ("model", "line"),
    [
        (
            "anthropic:claude-3-5-haiku-latest",
            "error: the anthropic: provider needs the Anthropic SDK: "
            "pip install 'ratchet-runtime[anthropic]'",
        ),
        (
            "openai:gpt-4o-mini",
            "error: the openai: provider needs the OpenAI SDK: pip install 'ratchet-runtime[openai]'",
        ),
        (
            "litellm:gemini/gemini-1.5-pro",
            "error: the litellm: provider needs LiteLLM: pip install 'ratchet-runtime[litellm]'",
        ),
        (
            "ollama:llama3.1",
            "error: the ollama: provider needs the OpenAI SDK: pip install 'ratchet-runtime[openai]'",
        ),
    ],
)
def test_a_model_whose_sdk_is_missing_names_the_extra(tmp_path: Path, model: str, line: str) -> None:
    done = _python(
        ["-m", "ratchet", "run", "x", "--model", model, "--store", "memory://"], tmp_path, without_extras=True
    )
    assert (done.returncode, done.stderr, done.stdout) == (2, line + "\n", "")


def test_the_demo_runs_without_any_extra(tmp_path: Path) -> None:
    done = _python(["-m", "ratchet", "demo"], tmp_path, without_extras=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every effect exactly once" in done.stdout


def test_a_postgresql_store_without_psycopg_names_the_extra(tmp_path: Path) -> None:
    done = _python(
        ["-m", "ratchet", "tasks", "--store", "postgresql://localhost/ratchet"], tmp_path, without_extras=True
    )
    line = "error: a postgresql:// store needs psycopg: pip install 'ratchet-runtime[postgres]'"
    assert (done.returncode, done.stderr, done.stdout) == (2, line + "\n", "")


def test_worker_metrics_without_prometheus_client_names_the_extra(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'r.db'}"
    done = _python(
        ["-m", "ratchet", "worker", "--store", store, "--metrics-port", "9464"], tmp_path, without_extras=True
    )
    line = "error: --metrics-port needs prometheus-client: pip install 'ratchet-runtime[metrics]'"
    assert (done.returncode, done.stderr, done.stdout) == (2, line + "\n", "")


def test_serve_without_fastapi_names_the_extra(tmp_path: Path) -> None:
    done = _python(["-m", "ratchet", "serve", "--store", "memory://"], tmp_path, without_extras=True)
    line = "error: `ratchet serve` needs FastAPI: pip install 'ratchet-runtime[serve]'"
    assert (done.returncode, done.stderr, done.stdout) == (2, line + "\n", "")


def test_the_langgraph_bridge_without_langgraph_names_the_extra(tmp_path: Path) -> None:
    program = (
        "import ratchet.integrations\n"
        "try:\n"
        "    import ratchet.integrations.langgraph\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = _python(["-c", program], tmp_path, without_extras=True)
    line = (
        "MissingExtra ratchet.integrations.langgraph needs LangGraph: "
        "pip install 'ratchet-runtime[langgraph]'"
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, line + "\n", "")


def test_the_langgraph_import_without_langgraph_names_the_extra(tmp_path: Path) -> None:
    done = _python(
        ["-m", "ratchet", "langgraph", "import", "--from", "sqlite:///old.db", "--store", "memory://"],
        tmp_path,
        without_extras=True,
    )
    line = (
        "error: `ratchet langgraph import` needs LangGraph: pip install 'ratchet-runtime[langgraph-import]'"
    )
    assert (done.returncode, done.stderr, done.stdout) == (2, line + "\n", "")
