"""ratchet.toml as the commands read it: each setting honoured, a flag over the environment over
the file over the built-in default, and a mistake in the file one line, exit 2.

Every test runs the real `ratchet` program in a project directory holding a
ratchet.toml, on real SQLite stores (one on a PostgreSQL store whose role
needs a password). The file's reader itself is tested in tests/unit/test_config.py.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from ratchet.cli.application import COMMANDS

from ..helpers.cli import (
    LineReader,
    RunRatchet,
    assert_one_line_error,
    ratchet_command,
    ratchet_env,
    ratchet_runner,
)
from ..helpers.pg import Cluster
from ..helpers.scripts import plan, say, verdict

# One step, reported done and checked; more answers than a task asks for.
SCRIPT = {"plan": [plan("answer")], "act": [say("done")] * 4, "verify": [verdict(True)] * 4}


def configure(directory: Path, text: str, name: str = "ratchet.toml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


def write_script(directory: Path, name: str = "script.json") -> str:
    (directory / name).write_text(json.dumps(SCRIPT))
    return f"scripted:{name}"


def listed(run: RunRatchet, *args: str, **env: str) -> list[dict[str, Any]]:
    done = run("tasks", "--json", *args, env=ratchet_env(**env))
    assert done.returncode == 0, done.stderr
    tasks: list[dict[str, Any]] = json.loads(done.stdout)
    return tasks


def submitted(run: RunRatchet, *args: str, **env: str) -> str:
    done = run("submit", "do it", "--json", *args, env=ratchet_env(**env))
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["task_id"])


@contextlib.contextmanager
def started(cwd: Path, *args: str, **env: str) -> Iterator[tuple[subprocess.Popen[str], LineReader]]:
    """`ratchet ARGS...` running in `cwd`, its output (stdout and stderr) read line by line;
    stopped (SIGTERM) after."""
    process = subprocess.Popen(
        ratchet_command(*args),
        cwd=cwd,
        env=ratchet_env(**env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    try:
        yield process, LineReader(process.stdout)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --------------------------------------------------------------------------- [store] url


def test_the_store_is_the_flag_else_the_environment_else_the_file_else_the_default(
    tmp_path: Path, run_ratchet: RunRatchet
) -> None:
    model = write_script(tmp_path)
    urls = {level: f"sqlite:///{tmp_path / level}.db" for level in ("flag", "env", "file")}
    urls["default"] = "sqlite:///./ratchet.db"
    for level, url in urls.items():
        submitted(run_ratchet, "--model", model, "--name", level, "--store", url)

    assert [task["name"] for task in listed(run_ratchet)] == ["default"]
    configure(tmp_path, f'[store]\nurl = "{urls["file"]}"\n')
    assert [task["name"] for task in listed(run_ratchet)] == ["file"]
    assert [task["name"] for task in listed(run_ratchet, RATCHET_STORE=urls["env"])] == ["env"]
    flagged = listed(run_ratchet, "--store", urls["flag"], RATCHET_STORE=urls["env"])
    assert [task["name"] for task in flagged] == ["flag"]


def test_every_command_works_on_the_file_s_store(tmp_path: Path, run_ratchet: RunRatchet) -> None:
    configure(tmp_path, '[store]\nurl = "sqlite:///./state/tasks.db"\n')
    (tmp_path / "state").mkdir()
    task_id = submitted(run_ratchet, "--model", write_script(tmp_path))

    for args in (
        ("show", task_id),
        ("events", task_id),
        ("journal", task_id),
        ("schedules",),
        ("gc", "--keep", "3"),
    ):
        done = run_ratchet(*args)
        assert done.returncode == 0, (args, done.stderr)
    assert run_ratchet("cancel", task_id).returncode == 0
    assert [task["status"] for task in listed(run_ratchet)] == ["cancelled"]
    assert run_ratchet("delete", task_id, "--yes").returncode == 0
    assert listed(run_ratchet) == []
    assert not (tmp_path / "ratchet.db").exists()  # the default store was never touched


# Every command with a --store option (the demo's reads no RATCHET_STORE, so nothing of the file).
LOADED = {name: command.load(name) for name, command in COMMANDS.items()}
STORE_COMMANDS = sorted(
    name for name, command in LOADED.items() if any(param.name == "store" for param in command.params)
)
GROUPS = sorted(name for name, command in LOADED.items() if hasattr(command, "commands"))


@pytest.mark.parametrize("name", STORE_COMMANDS)
def test_each_command_s_store_option_defaults_to_the_file_s_but_the_demo_s(
    tmp_path: Path, run_ratchet: RunRatchet, name: str
) -> None:
    configure(tmp_path, '[store]\nurl = "sqlite:///./from-file.db"\n')

    done = run_ratchet(name, "--help")

    assert done.returncode == 0, done.stderr
    shown = " ".join(done.stdout.replace("│", " ").split())
    if name == "demo":  # it never writes to your store unless --store names it: RATCHET_STORE neither
        assert "from-file.db" not in shown
    else:
        assert "[default: sqlite:///./from-file.db (from ratchet.toml)]" in shown


def test_a_group_s_subcommands_take_the_file_s_store(tmp_path: Path, run_ratchet: RunRatchet) -> None:
    assert list(GROUPS) == ["budget", "langgraph", "limit"]
    configure(tmp_path, '[store]\nurl = "sqlite:///./from-file.db"\n')
    asked = [
        ("langgraph", "import"),
        *((group, command) for group in ("budget", "limit") for command in ("set", "list", "delete")),
    ]
    for group, command in asked:
        done = run_ratchet(group, command, "--help")
        shown = " ".join(done.stdout.replace("│", " ").split())
        assert "sqlite:///./from-file.db (from ratchet.toml)" in shown, (group, command)


# --------------------------------------------------------------------------- [model] default


def test_the_model_is_the_flag_else_the_environment_else_the_file(
    tmp_path: Path, run_ratchet: RunRatchet
) -> None:
    for name in ("file.json", "env.json", "flag.json"):
        write_script(tmp_path, name)

    missing = run_ratchet("submit", "do it")
    assert_one_line_error(missing, "--model")
    configure(tmp_path, '[model]\ndefault = "scripted:file.json"\n')
    submitted(run_ratchet)
    submitted(run_ratchet, RATCHET_MODEL="scripted:env.json")
    submitted(run_ratchet, "--model", "scripted:flag.json", RATCHET_MODEL="scripted:env.json")

    models = [task["model"] for task in listed(run_ratchet)]
    assert models == ["scripted:file.json", "scripted:env.json", "scripted:flag.json"]


def test_a_fallback_chain_comes_from_repeated_flags_or_from_a_list_in_the_file(
    tmp_path: Path, run_ratchet: RunRatchet
) -> None:
    for name in ("a.json", "b.json", "c.json"):
        write_script(tmp_path, name)
    configure(tmp_path, '[model]\ndefault = ["scripted:a.json", "scripted:b.json"]\n')
    submitted(run_ratchet)
    submitted(
        run_ratchet, "--model", "scripted:c.json", "--model", "scripted:a.json", "--fallback-on-pressure"
    )

    chains = [
        (task["model"], task["fallback_models"], task["fallback_on_pressure"])
        for task in listed(run_ratchet, "--sort", "created")
    ]
    assert chains == [
        ("scripted:a.json", ["scripted:b.json"], False),
        ("scripted:c.json", ["scripted:a.json"], True),
    ]
    twice = run_ratchet("submit", "do it", "--model", "scripted:a.json", "--model", "scripted:a.json")
    assert_one_line_error(twice, "named twice")


def test_run_carries_out_a_task_with_the_file_s_model(tmp_path: Path, run_ratchet: RunRatchet) -> None:
    configure(tmp_path, '[model]\ndefault = "scripted:script.json"\n')
    write_script(tmp_path)

    done = run_ratchet("run", "do it", "--json")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["status"] == "completed"
    assert [task["model"] for task in listed(run_ratchet)] == ["scripted:script.json"]


def test_chat_talks_to_the_file_s_model(tmp_path: Path, run_ratchet: RunRatchet) -> None:
    configure(tmp_path, '[model]\ndefault = "scripted:chat.json"\n')
    (tmp_path / "chat.json").write_text(json.dumps({"act": [{"content": "Hello from the file's model."}]}))

    done = subprocess.run(
        ratchet_command("chat", "--session", "s"),
        cwd=tmp_path,
        env=ratchet_env(RATCHET_HOME="."),
        input="hello\nexit\n",
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    assert "assistant: Hello from the file's model." in done.stdout


def test_serve_gives_a_task_asked_for_without_a_model_the_file_s(tmp_path: Path) -> None:
    configure(
        tmp_path,
        """
        [store]
        url = "sqlite:///./served.db"

        [model]
        default = "scripted:script.json"
        """,
    )
    write_script(tmp_path)

    with started(tmp_path, "serve", "--port", "0") as (_, output):
        output.wait_for("ratchet serve: the dashboard at", timeout=60)
        [line] = [line for line in output.lines if "ratchet serve:" in line]
        base = line.split(" at ", 1)[1].split("/,", 1)[0]
        asked = httpx.post(f"{base}/api/tasks", json={"instruction": "do it"}, timeout=30)

    assert asked.status_code == 201, asked.text
    assert asked.json()["model"] == "scripted:script.json"
    assert (tmp_path / "served.db").exists()


async def test_mcp_gives_a_task_asked_for_without_a_model_the_file_s(tmp_path: Path) -> None:
    configure(
        tmp_path,
        """
        [store]
        url = "sqlite:///./mcp.db"

        [model]
        default = "scripted:script.json"
        """,
    )
    write_script(tmp_path)
    command = ratchet_command("mcp")
    params = StdioServerParameters(command=command[0], args=command[1:], env=ratchet_env(), cwd=tmp_path)

    async with Client(params, read_timeout_seconds=30) as client:
        created = await client.call_tool("create_task", {"instruction": "do it"})

    assert not created.is_error, created
    assert [task["model"] for task in listed(ratchet_runner(tmp_path))] == ["scripted:script.json"]


# --------------------------------------------------------------------------- [log]


def _worker_logs(run: RunRatchet, *args: str, **env: str) -> list[str]:
    done = run("worker", "--until-idle", "--store", "memory://", *args, env=ratchet_env(**env))
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines()


def test_the_log_level_is_the_flag_else_the_environment_else_the_file_else_the_command_s(
    tmp_path: Path, run_ratchet: RunRatchet
) -> None:
    def says_info(lines: list[str]) -> bool:
        return any(" INFO ratchet.worker: worker " in line for line in lines)

    assert says_info(_worker_logs(run_ratchet))  # the worker's own default: info
    configure(tmp_path, '[log]\nlevel = "error"\n')
    assert not says_info(_worker_logs(run_ratchet))
    assert says_info(_worker_logs(run_ratchet, RATCHET_LOG_LEVEL="info"))
    assert not says_info(_worker_logs(run_ratchet, "--log-level", "error", RATCHET_LOG_LEVEL="info"))
    configure(tmp_path, '[log]\nlevel = "DEBUG"\n')  # any case, as the flag takes it
    assert any(" DEBUG " in line for line in _worker_logs(run_ratchet))


def test_the_log_format_json_makes_each_log_line_one_json_object(
    tmp_path: Path, run_ratchet: RunRatchet
) -> None:
    configure(tmp_path, '[log]\nformat = "json"\n')

    lines = _worker_logs(run_ratchet)

    records = [json.loads(line) for line in lines]
    assert records, lines
    assert {record["logger"] for record in records} == {"ratchet.worker"}
    assert all(set(record) == {"time", "level", "logger", "message"} for record in records)
    assert records[-1]["level"] == "INFO" and records[-1]["message"].endswith("stopped")
    assert records[-1]["time"].endswith("+00:00")
    assert not any(line.startswith("{") for line in _worker_logs(run_ratchet, RATCHET_LOG_FORMAT="text"))
    assert not any(line.startswith("{") for line in _worker_logs(run_ratchet, "--log-format", "text"))


def test_serve_logs_uvicorn_s_lines_as_json_too(tmp_path: Path) -> None:
    configure(tmp_path, '[log]\nformat = "json"\n\n[store]\nurl = "sqlite:///./served.db"\n')

    with started(tmp_path, "serve", "--port", "0") as (_, output):
        output.wait_for("Application startup complete", timeout=60)

    logged = [line for line in output.lines if not line.startswith("ratchet serve:")]
    records = [json.loads(line) for line in logged]
    assert any(
        record["logger"].startswith("uvicorn") and "Application startup complete" in record["message"]
        for record in records
    ), logged


# --------------------------------------------------------------------------- [worker]

# Each worker setting at each level: the file's, the environment's, the flag's (and the defaults).
WORKER_LEVELS: dict[str, dict[str, Any]] = {
    "file": {"concurrency": 3, "name": "w-file", "lease_ttl": 45, "poll": 0.25, "grace": 5},
    "env": {"concurrency": 5, "name": "w-env", "lease_ttl": 50, "poll": 0.3, "grace": 6},
    "flag": {"concurrency": 7, "name": "w-flag", "lease_ttl": 55, "poll": 0.35, "grace": 7},
}


def _start_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return next(line for line in done.stdout.splitlines() if line.startswith("worker "))


def _said(values: dict[str, Any]) -> str:
    return (
        f"concurrency {values['concurrency']}, lease {values['lease_ttl']:g} s, "
        f"polling every {values['poll']:g} s, grace {values['grace']:g} s;"
    )


def test_each_worker_setting_is_the_flag_else_the_environment_else_the_file_else_the_default(
    tmp_path: Path, run_ratchet: RunRatchet
) -> None:
    store = "sqlite:///./work.db"
    for level in WORKER_LEVELS:  # each level imports a module of its own: it writes a file if it does
        (tmp_path / f"{level}_flows.py").write_text(f"open('{level}-imported', 'w').close()\n")
    file, env, flag = WORKER_LEVELS["file"], WORKER_LEVELS["env"], WORKER_LEVELS["flag"]
    environment = {f"RATCHET_WORKER_{key.upper()}": str(value) for key, value in env.items()}
    environment["RATCHET_WORKER_WORKFLOWS"] = "env_flows.py"
    flags = [part for key, value in flag.items() for part in (f"--{key.replace('_', '-')}", str(value))]

    default = _start_line(run_ratchet("worker", "--until-idle", "--store", store))
    assert "concurrency 4, lease 30 s, polling every 0.5 s, grace 30 s;" in default
    configure(
        tmp_path,
        f"""
        [worker]
        concurrency = {file["concurrency"]}
        name = "{file["name"]}"
        lease_ttl = {file["lease_ttl"]}
        poll = {file["poll"]}
        grace = {file["grace"]}
        workflows = ["file_flows.py"]
        """,
    )
    from_file = _start_line(run_ratchet("worker", "--until-idle", "--store", store))
    from_env = _start_line(
        run_ratchet("worker", "--until-idle", "--store", store, env=ratchet_env(**environment))
    )
    from_flag = _start_line(
        run_ratchet(
            "worker",
            "--until-idle",
            "--store",
            store,
            *flags,
            "--workflows",
            "flag_flows.py",
            env=ratchet_env(**environment),
        )
    )

    assert from_file.startswith("worker w-file on ") and _said(file) in from_file
    assert from_env.startswith("worker w-env on ") and _said(env) in from_env
    assert from_flag.startswith("worker w-flag on ") and _said(flag) in from_flag
    # The file's workflows were imported by the worker that read them; the environment's and the
    # flag's replaced them (a flag given replaces the list, as it replaces any value).
    assert sorted(path.name for path in tmp_path.glob("*-imported")) == [
        "env-imported",
        "file-imported",
        "flag-imported",
    ]


def test_the_lease_ttl_is_resume_s_and_retry_s_too(tmp_path: Path, run_ratchet: RunRatchet) -> None:
    configure(tmp_path, "[worker]\nlease_ttl = 45\nconcurrency = 2\n")
    for command in ("resume", "retry", "worker"):
        shown = " ".join(run_ratchet(command, "--help").stdout.replace("│", " ").split())
        assert "[default: 45.0 (from ratchet.toml)]" in shown, command
    shown = " ".join(run_ratchet("resume", "--help").stdout.replace("│", " ").split())
    assert "--concurrency" not in shown  # a setting only the worker has goes to the worker only


def test_the_worker_serves_metrics_where_the_file_says(tmp_path: Path) -> None:
    port = _free_port()
    configure(tmp_path, f'[worker]\nmetrics_port = {port}\nmetrics_host = "127.0.0.1"\n')

    with started(tmp_path, "worker", "--store", "sqlite:///./work.db") as (_, output):
        output.wait_for("worker ", timeout=60)
        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30)

    assert scraped.status_code == 200
    assert "ratchet_" in scraped.text


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --------------------------------------------------------------------------- which file


def test_config_names_another_file_over_ratchet_config_and_its_endpoints_too(
    tmp_path: Path, run_ratchet: RunRatchet
) -> None:
    configure(tmp_path, '[store]\nurl = "sqlite:///./here.db"\n')
    configure(tmp_path, '[store]\nurl = "sqlite:///./env.db"\n', name="env.toml")
    other = configure(
        tmp_path,
        """
        [store]
        url = "sqlite:///./other.db"

        [endpoints.gpu]
        provider = "openai"
        api_key_env = "NO_SUCH_KEY_SET"
        """,
        name="other.toml",
    )
    model = write_script(tmp_path)

    submitted(run_ratchet, "--model", model, "--name", "here")
    submitted(run_ratchet, "--model", model, "--name", "env", RATCHET_CONFIG="env.toml")
    done = run_ratchet(
        "--config",
        str(other),
        "submit",
        "x",
        "--model",
        model,
        "--name",
        "other",
        "--json",
        env=ratchet_env(RATCHET_CONFIG="env.toml"),
    )
    assert done.returncode == 0, done.stderr
    endpoint = run_ratchet("--config", "other.toml", "submit", "x", "--model", "gpu:m")

    assert [task["name"] for task in listed(run_ratchet)] == ["here"]
    assert [task["name"] for task in listed(run_ratchet, RATCHET_CONFIG="env.toml")] == ["env"]
    assert [task["name"] for task in listed(run_ratchet, "--store", "sqlite:///./other.db")] == ["other"]
    assert_one_line_error(endpoint, "other.toml", "NO_SUCH_KEY_SET, which is not set")


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (("--config", "none.toml", "tasks"), {}, "--config names none.toml, which does not exist"),
        (("tasks",), {"RATCHET_CONFIG": "none.toml"}, "RATCHET_CONFIG names none.toml, which does not exist"),
    ],
)
def test_a_config_file_named_that_does_not_exist_is_one_line(
    run_ratchet: RunRatchet, args: tuple[str, ...], env: dict[str, str], says: str
) -> None:
    assert_one_line_error(run_ratchet(*args, env=ratchet_env(**env)), says)


# --------------------------------------------------------------------------- mistakes


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[worker\nconcurrency = 4\n", "ratchet.toml is not valid TOML: Expected ']'"),
        ("[worker]\nconcurency = 4\n", "ratchet.toml, [worker]: unknown key 'concurency'; the keys are"),
        ('[worker]\nconcurrency = "4"\n', "ratchet.toml, [worker]: concurrency must be a whole number"),
        ("[worker]\nconcurrency = 0\n", "from 1 to 1000"),
        ('[logging]\nlevel = "info"\n', "ratchet.toml: unknown section [logging]; the sections are"),
        ('[log]\nlevel = "verbose"\n', 'ratchet.toml, [log]: level must be one of "debug", "info"'),
        ("[store]\nurl = 1\n", "ratchet.toml, [store]: url must be a store URL"),
    ],
)
def test_a_mistake_in_the_file_is_one_line_and_exit_2(
    tmp_path: Path, run_ratchet: RunRatchet, text: str, says: str
) -> None:
    configure(tmp_path, text)
    assert_one_line_error(run_ratchet("tasks"), says)


@pytest.mark.parametrize(
    "args",
    [
        ("tasks",),
        ("show", "t1"),
        ("submit", "x", "--model", "scripted:s.json"),
        ("run", "x", "--model", "scripted:s.json"),
        ("worker", "--until-idle"),
        ("serve",),
        ("mcp",),
        ("demo", "--help"),
        ("worker", "--help"),
    ],
)
def test_a_mistake_stops_every_command_even_one_the_key_is_not_for(
    tmp_path: Path, run_ratchet: RunRatchet, args: tuple[str, ...]
) -> None:
    configure(tmp_path, "[worker]\ngrace = -1\n")
    assert_one_line_error(run_ratchet(*args), "ratchet.toml, [worker]: grace must be a number of seconds")
    assert not (tmp_path / "ratchet.db").exists()  # nothing ran


def test_the_version_and_the_program_s_help_need_no_valid_file(
    tmp_path: Path, run_ratchet: RunRatchet
) -> None:
    configure(tmp_path, "[worker\n")
    assert run_ratchet("--version").returncode == 0
    assert run_ratchet("--help").returncode == 0


# --------------------------------------------------------------------------- a password in the file


def test_a_store_password_in_the_file_is_never_printed(tmp_path: Path, run_ratchet: RunRatchet) -> None:
    secret = secrets.token_hex(8)
    configure(tmp_path, f'[store]\nurl = "postgresql://bob:{secret}@127.0.0.1:1/db"\n')

    unreachable = run_ratchet("tasks")
    helped = run_ratchet("worker", "--help")

    assert_one_line_error(unreachable, "127.0.0.1:1")
    assert secret not in unreachable.stderr
    assert helped.returncode == 0
    assert secret not in helped.stdout and "bob:***@" in helped.stdout


@pytest.fixture
def passworded(postgres: Cluster) -> Iterator[tuple[str, str]]:
    """A database owned by a role that must give its password: its store URL, and the password."""
    role, password, database = "ratchet_config_pw", secrets.token_hex(12), f"cfg_{secrets.token_hex(4)}"
    postgres.require_password(role, password)
    with postgres.admin() as conn:
        conn.execute(f"CREATE DATABASE {database} OWNER {role}")
    try:
        yield f"postgresql://{role}:{password}@localhost:{postgres.port}/{database}", password
    finally:
        with postgres.admin() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def test_a_postgresql_store_from_the_file_works_and_its_password_is_never_printed(
    tmp_path: Path, run_ratchet: RunRatchet, passworded: tuple[str, str]
) -> None:
    url, password = passworded
    configure(tmp_path, f'[store]\nurl = "{url}"\n\n[log]\nlevel = "debug"\n')
    model = write_script(tmp_path)

    migrated = run_ratchet("migrate")
    task_id = submitted(run_ratchet, "--model", model)
    worked = run_ratchet("worker", "--until-idle")
    wrong = run_ratchet("tasks", env=ratchet_env(RATCHET_STORE=url.replace(password, "not-" + password)))

    assert migrated.returncode == 0, migrated.stderr
    assert worked.returncode == 0, worked.stderr
    assert [(task["task_id"], task["status"]) for task in listed(run_ratchet)] == [(task_id, "completed")]
    assert "ratchet_config_pw:***@localhost" in _start_line(worked)
    for done in (migrated, worked, wrong):
        assert password not in done.stdout + done.stderr
    assert_one_line_error(wrong, "password authentication failed")
