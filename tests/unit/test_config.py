"""`ratchet.config`: which ratchet.toml is read, what it may say, and each mistake in one line.

The commands' side (a setting as an option's default, its precedence, exit 2)
is tested with the real program in tests/cli/test_cli_config.py.
"""

from __future__ import annotations

import contextvars
from pathlib import Path

import annotated_types
import pytest
import typer

from ratchet.cli.application import app
from ratchet.config import choose_config, find_config, load_config
from ratchet.config.schema import ENVIRONMENT, ProjectConfig
from ratchet.errors import InputError

EVERYTHING = """
[store]
url = "sqlite:///./state.db"

[model]
default = "scripted:script.json"

[log]
level = "DEBUG"
format = "json"

[worker]
concurrency = 8
name = "w-east"
lease_ttl = 45
poll = 0.25
grace = 5.5
workflows = ["myapp.agents", "flows.py"]
metrics_port = 9100
metrics_host = "0.0.0.0"
compatible_versions = true

[worker.retain]
completed = "30d"
failed = "12h"

[endpoints.gpu]
provider = "openai"
base_url = "http://gpu-box:8000/v1"
api_key_env = "GPU_BOX_KEY"
timeout = 600
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory as the current one, no config file chosen by the environment."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RATCHET_CONFIG", raising=False)
    return tmp_path


def test_every_key_is_read_with_its_type(here: Path) -> None:
    (here / "ratchet.toml").write_text(EVERYTHING)

    config = load_config()

    assert config.store.url == "sqlite:///./state.db"
    assert config.model.default == "scripted:script.json"
    assert (config.log.level, config.log.format) == ("debug", "json")  # any case, as --log-level takes
    worker = config.worker
    assert (worker.concurrency, worker.name, worker.lease_ttl, worker.poll, worker.grace) == (
        8,
        "w-east",
        45.0,
        0.25,
        5.5,
    )
    assert worker.workflows == ["myapp.agents", "flows.py"]
    assert (worker.metrics_port, worker.metrics_host) == (9100, "0.0.0.0")
    assert worker.retain == {"completed": "30d", "failed": "12h"}
    gpu = config.endpoints["gpu"]
    assert (gpu.provider, gpu.base_url, gpu.api_key_env, gpu.timeout) == (
        "openai",
        "http://gpu-box:8000/v1",
        "GPU_BOX_KEY",
        600.0,
    )


def test_each_setting_is_given_by_its_environment_variable(here: Path) -> None:
    (here / "ratchet.toml").write_text(EVERYTHING)

    settings = load_config().settings()

    assert sorted(settings) == sorted(ENVIRONMENT.values())
    assert settings["RATCHET_STORE"] == "sqlite:///./state.db"
    assert settings["RATCHET_WORKER_LEASE_TTL"] == 45.0
    assert settings["RATCHET_WORKER_WORKFLOWS"] == ["myapp.agents", "flows.py"]
    assert settings["RATCHET_WORKER_RETAIN"] == ["completed=30d", "failed=12h"]  # as --retain repeated


def test_every_setting_has_its_variable_and_no_variable_names_two() -> None:
    fields = {
        (section, key)
        for section, info in ProjectConfig.model_fields.items()
        if section != "endpoints"
        for key in info.annotation.model_fields  # type: ignore[union-attr]
    }
    assert fields == set(ENVIRONMENT)
    assert len(set(ENVIRONMENT.values())) == len(ENVIRONMENT)


def test_no_file_is_an_empty_config_and_sets_nothing(here: Path) -> None:
    assert find_config() is None
    assert load_config().settings() == {}
    assert load_config().endpoints == {}


def test_only_the_current_directory_is_looked_in(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (here / "ratchet.toml").write_text("[worker]\nconcurrency = 2\n")
    below = here / "sub"
    below.mkdir()
    monkeypatch.chdir(below)

    assert find_config() is None  # a parent's file is another project root's


def test_ratchet_config_names_the_file(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (here / "ratchet.toml").write_text("[worker]\nconcurrency = 2\n")
    other = here / "prod.toml"
    other.write_text("[worker]\nconcurrency = 3\n")
    monkeypatch.setenv("RATCHET_CONFIG", str(other))

    assert find_config() == other
    assert load_config().worker.concurrency == 3


def test_a_chosen_file_wins_over_ratchet_config_in_its_context_only(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = here / "chosen.toml"
    chosen.write_text("[worker]\nconcurrency = 5\n")
    env_file = here / "env.toml"
    env_file.write_text("[worker]\nconcurrency = 6\n")
    monkeypatch.setenv("RATCHET_CONFIG", str(env_file))

    def in_a_command() -> int | None:
        choose_config(chosen, given_by="--config")
        return load_config().worker.concurrency

    assert contextvars.copy_context().run(in_a_command) == 5
    assert load_config().worker.concurrency == 6  # the choice stayed in the command's context


@pytest.mark.parametrize(("given_by", "how"), [("--config", "choose"), ("RATCHET_CONFIG", "environment")])
def test_a_file_named_that_does_not_exist_is_one_line(
    here: Path, monkeypatch: pytest.MonkeyPatch, given_by: str, how: str
) -> None:
    def look() -> None:
        if how == "choose":
            choose_config(here / "none.toml", given_by="--config")
        else:
            monkeypatch.setenv("RATCHET_CONFIG", str(here / "none.toml"))
        find_config()

    with pytest.raises(InputError) as raised:
        contextvars.copy_context().run(look)
    assert raised.value.message == f"{given_by} names {here / 'none.toml'}, which does not exist"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        # broken TOML: where, never what is there
        ("[worker\nconcurrency = 4\n", "ratchet.toml is not valid TOML: Expected ']'"),
        ("[store]\nurl = postgresql://bob:s3cret@db/x\n", "ratchet.toml is not valid TOML: Invalid value"),
        # unknown sections and keys
        ("[workers]\nconcurrency = 4\n", "ratchet.toml: unknown section [workers]; the sections are"),
        ("concurrency = 4\n", "ratchet.toml: unknown key 'concurrency' outside any section"),
        (
            "[worker]\nconcurency = 4\n",
            "ratchet.toml, [worker]: unknown key 'concurency'; the keys are concurrency",
        ),
        ('[store]\npath = "x.db"\n', "ratchet.toml, [store]: unknown key 'path'; the keys are url"),
        ('[model]\nname = "x"\n', "ratchet.toml, [model]: unknown key 'name'; the keys are default"),
        ('[log]\nlevels = "x"\n', "ratchet.toml, [log]: unknown key 'levels'; the keys are level, format"),
        # a section that is not a table
        ('store = "sqlite:///x.db"\n', "ratchet.toml: store must be a table of settings, written [store]"),
        # wrong types: TOML's types are taken as they are
        (
            '[worker]\nconcurrency = "4"\n',
            "[worker]: concurrency must be a whole number of tasks run at once",
        ),
        ("[worker]\nconcurrency = 4.0\n", "[worker]: concurrency must be a whole number"),
        ("[worker]\nconcurrency = true\n", "[worker]: concurrency must be a whole number"),
        ('[worker]\npoll = "1s"\n', "[worker]: poll must be a number of seconds from 0.01 to 86400"),
        ("[worker]\ngrace = true\n", "[worker]: grace must be a number of seconds from 0 to 86400"),
        ("[worker]\nname = 3\n", "[worker]: name must be the name the worker holds its leases under"),
        (
            '[worker]\nworkflows = "myapp.agents"\n',
            "[worker]: workflows must be a list of modules or .py files",
        ),
        ('[worker]\nmetrics_port = "9100"\n', "[worker]: metrics_port must be a port number from 1 to 65535"),
        ("[store]\nurl = 5\n", "[store]: url must be a store URL"),
        ("[model]\ndefault = []\n", "[model]: default must be a model string, provider:name"),
        ("[log]\nformat = 1\n", '[log]: format must be "text" (a line for people) or "json"'),
        # values out of their range
        (
            "[worker]\nconcurrency = 0\n",
            "[worker]: concurrency must be a whole number of tasks run at once, from 1 to 1000",
        ),
        ("[worker]\nconcurrency = 1001\n", "from 1 to 1000"),
        ("[worker]\nlease_ttl = 0.5\n", "[worker]: lease_ttl must be a number of seconds from 1 to 86400"),
        ("[worker]\npoll = inf\n", "[worker]: poll must be a number of seconds from 0.01 to 86400"),
        ("[worker]\ngrace = nan\n", "[worker]: grace must be a number of seconds from 0 to 86400"),
        ("[worker]\nmetrics_port = 70000\n", "[worker]: metrics_port must be a port number from 1 to 65535"),
        ('[log]\nlevel = "loud"\n', '[log]: level must be one of "debug", "info", "warning" or "error"'),
        ('[store]\nurl = ""\n', "[store]: url must be a store URL"),
        ('[worker]\nworkflows = [""]\n', "[worker]: workflows must be a list of modules"),
        ('[worker.retain]\nrunning = "1d"\n', "[worker]: retain must be a table of how long an ended task"),
        ('[worker.retain]\ncompleted = "soon"\n', "[worker]: retain must be a table"),
        ('[worker.retain]\ncompleted = "0s"\n', "[worker]: retain must be a table"),
        ("[worker.retain]\ncompleted = 30\n", "[worker]: retain must be a table"),
        ('[worker]\nretain = ["completed=30d"]\n', "[worker]: retain must be a table"),
        # endpoints, checked with the rest
        (
            '[endpoints.Gpu]\nprovider = "openai"\n',
            "[endpoints.Gpu]: name an endpoint with lower-case letters",
        ),
        (
            "[endpoints]\ngpu = 3\n",
            "[endpoints.gpu]: must be a table with provider, base_url and api_key_env",
        ),
        ("endpoints = 3\n", "ratchet.toml: endpoints must be a table of [endpoints.NAME] tables"),
    ],
)
def test_a_mistake_is_one_line_naming_the_file_and_the_key(here: Path, text: str, says: str) -> None:
    (here / "ratchet.toml").write_text(text)

    with pytest.raises(InputError) as raised:
        load_config()

    message = raised.value.message
    assert says in message
    assert message.startswith("ratchet.toml")
    assert "\n" not in message


def test_a_mistake_never_quotes_a_store_url(here: Path) -> None:
    (here / "ratchet.toml").write_text('[store]\nurl = "postgresql://bob:s3cret@db/x"\ncolour = 1\n')
    with pytest.raises(InputError) as raised:
        load_config()
    assert "s3cret" not in raised.value.message
    assert "unknown key 'colour'" in raised.value.message


def test_a_file_that_is_not_utf8_or_not_a_file_is_one_line(here: Path) -> None:
    (here / "ratchet.toml").write_bytes(b"[store]\nurl = '\xff'\n")
    with pytest.raises(InputError, match=r"^ratchet\.toml is not UTF-8 text; save it as UTF-8$"):
        load_config()
    (here / "ratchet.toml").unlink()
    (here / "ratchet.toml").mkdir()
    with pytest.raises(InputError, match=r"^cannot read ratchet\.toml: Is a directory$"):
        load_config()


def test_the_configuration_page_lists_every_key_with_its_variable() -> None:
    page = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in page.splitlines() if line.startswith("| `[")}
    for (section, key), variable in ENVIRONMENT.items():
        row = rows.get(f"`[{section}] {key}`")
        assert row is not None, f"docs/configuration.md lists no [{section}] {key}"
        assert f"`{variable}`" in row
    assert "`[endpoints.NAME]`" in rows


def _range(param: object) -> tuple[object, object]:
    """The bounds a command-line option holds its number to (newer Typer keeps them on the option)."""
    holder = param if hasattr(param, "min") else getattr(param, "type", None)
    return getattr(holder, "min", None), getattr(holder, "max", None)


def test_the_file_holds_each_number_to_the_bounds_its_flag_holds_it_to() -> None:
    checked = set()
    for command in typer.main.get_command(app).commands.values():  # type: ignore[attr-defined]
        for param in command.params:
            for (section, key), variable in ENVIRONMENT.items():
                if param.envvar != variable:
                    continue
                field = ProjectConfig.model_fields[section].annotation.model_fields[key]  # type: ignore[union-attr]
                low = next((m.ge for m in field.metadata if isinstance(m, annotated_types.Ge)), None)
                high = next((m.le for m in field.metadata if isinstance(m, annotated_types.Le)), None)
                assert _range(param) == (low, high), f"{command.name} {param.name} and [{section}] {key}"
                checked.add(key)
    assert {"concurrency", "lease_ttl", "poll", "grace", "metrics_port"} <= checked
