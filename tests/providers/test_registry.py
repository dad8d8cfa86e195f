"""Adding providers: `register_provider`, the ``ratchet.providers`` entry points, named endpoints."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from subprocess import CompletedProcess

import pytest

import ratchet
from ratchet import InputError, register_provider
from ratchet.pricing import priced_model
from ratchet.providers import ModelError, ModelRequest, ModelResponse, resolve_model
from ratchet.providers.openai_compat import OpenAIModel

from ..helpers.loopback import LoopbackServer, Reply
from .test_openai_compat import ACT, completion

PLUGIN = '''
"""A provider shipped by another distribution: answers a plan, acts, passes its checks."""

from ratchet.providers import ModelResponse

PLAN = {
    "goal": "say hello",
    "steps": [
        {
            "step_name": "greet",
            "description": "say hello",
            "action_instruction": "say hello",
            "validation_instruction": "hello was said",
        }
    ],
}


class EchoModel:
    def __init__(self, model):
        self.model = model
        self.name = "echo:" + model

    async def complete(self, request, *, ordinal):
        answers = {"plan": PLAN, "verify": {"passed": True, "reason": "ok"}}
        content = answers.get(str(request.purpose), "hello from " + self.model)
        return ModelResponse(content=content, ordinal=ordinal)
'''

ENTRY_POINTS = """
[ratchet.providers]
echo = ratchet_echo:EchoModel
broken = ratchet_echo_missing:factory
"""


class Answering:
    """A provider made by a factory in the test: answers every request with its name."""

    def __init__(self, model: str) -> None:
        self.name = f"answering:{model}"

    async def complete(self, request: ModelRequest, *, ordinal: int) -> ModelResponse:
        return ModelResponse(content=self.name, ordinal=ordinal)


class Replacement(Answering):
    pass


def fresh_prefix() -> str:
    # The registry is the process's: each test takes a prefix of its own.
    return f"t{uuid.uuid4().hex[:8]}"


# --------------------------------------------------------------------------- register_provider


async def test_a_registered_provider_serves_its_prefix() -> None:
    prefix = fresh_prefix()
    register_provider(prefix, Answering)

    model = resolve_model(f"{prefix}:small")

    assert isinstance(model, Answering)
    assert (await model.complete(ACT, ordinal=0)).content == "answering:small"
    with pytest.raises(InputError) as unknown:
        resolve_model("nope:x")
    assert prefix in unknown.value.message


def test_a_taken_prefix_is_refused_unless_replaced() -> None:
    with pytest.raises(InputError, match="provider 'openai' is already registered; pass replace=True"):
        register_provider("openai", Answering)
    prefix = fresh_prefix()
    register_provider(prefix, Answering)
    register_provider(prefix, Answering)  # the same factory again: harmless
    register_provider(prefix, Replacement, replace=True)
    assert isinstance(resolve_model(f"{prefix}:m"), Replacement)


@pytest.mark.parametrize("prefix", ["", "Upper", "1st", "has space", "a:b"])
def test_a_malformed_prefix_is_refused(prefix: str) -> None:
    with pytest.raises(InputError, match="provider prefix"):
        register_provider(prefix, Answering)


def test_a_factory_that_fails_is_one_line_naming_it() -> None:
    prefix = fresh_prefix()

    def failing(model: str) -> Answering:
        raise ValueError(f"no such model\n{model}")

    register_provider(prefix, failing)
    with pytest.raises(InputError) as raised:
        resolve_model(f"{prefix}:m")
    assert (
        raised.value.message == f"provider {prefix!r} could not build model 'm': ValueError: no such model m"
    )


# --------------------------------------------------------------------------- entry points


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding an installed distribution that declares ``ratchet.providers`` entry points.

    Written as an installer leaves it (a module, and its ``.dist-info`` with
    ``METADATA`` and ``entry_points.txt``), so ``importlib.metadata`` finds it
    for real on ``sys.path``. (Not built by pip: building needs the ``wheel``
    package, which a test environment may lack, and no index is reachable.)
    """
    site = tmp_path_factory.mktemp("site")
    (site / "ratchet_echo.py").write_text(textwrap.dedent(PLUGIN))
    info = site / "ratchet_echo_provider-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ratchet-echo-provider\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (info / "RECORD").write_text("ratchet_echo.py,,\n")
    return site


def ratchet_cli(
    cwd: Path, *args: str, site: Path | None = None, drop: tuple[str, ...] = ()
) -> CompletedProcess[str]:
    """``python -m ratchet ARGS``, the ratchet under test first on the path (then `site`, if given);
    without the environment variables whose names start with one of `drop`."""
    source = Path(ratchet.__file__).parents[1]
    env = {key: value for key, value in os.environ.items() if not key.startswith(("RATCHET_STORE", *drop))}
    env["PYTHONPATH"] = os.pathsep.join(str(path) for path in (source, site) if path is not None)
    return subprocess.run(
        [sys.executable, "-m", "ratchet", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_installed_distribution_adds_its_provider(plugin_site: Path, tmp_path: Path) -> None:
    done = ratchet_cli(
        tmp_path, "run", "say hello", "--model", "echo:m1", "--store", "memory://", site=plugin_site
    )
    assert done.returncode == 0, done.stderr
    assert "hello from m1" in done.stdout


def test_a_broken_entry_point_is_one_line_naming_it(plugin_site: Path, tmp_path: Path) -> None:
    done = ratchet_cli(
        tmp_path, "run", "say hello", "--model", "broken:m1", "--store", "memory://", site=plugin_site
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: the ratchet.providers entry point 'broken' (ratchet_echo_missing:factory) failed to load: "
        "ModuleNotFoundError: No module named 'ratchet_echo_missing'\n"
    )


# --------------------------------------------------------------------------- named endpoints


def configure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    config = tmp_path / "ratchet.toml"
    config.write_text(textwrap.dedent(text))
    monkeypatch.setenv("RATCHET_CONFIG", str(config))


async def test_a_named_endpoint_is_its_provider_at_its_url_with_its_key(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(
        tmp_path,
        monkeypatch,
        f"""
        [endpoints.gpu]
        provider = "openai"
        base_url = "{server.url}/v1"
        api_key_env = "GPU_KEY"
        """,
    )
    monkeypatch.setenv("GPU_KEY", "sk-gpu")
    server.answer(Reply(completion("hi")))

    model = resolve_model("gpu:qwen2.5")

    assert isinstance(model, OpenAIModel)
    assert (model.name, model.base_url) == ("gpu:qwen2.5", f"{server.url}/v1")
    assert (await model.complete(ACT, ordinal=0)).content == "hi"
    assert server.last.headers["authorization"] == "Bearer sk-gpu"
    assert server.last.body["model"] == "qwen2.5"


async def test_a_named_endpoint_s_timeout_is_its_provider_s(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(
        tmp_path,
        monkeypatch,
        f"""
        [endpoints.cpu]
        provider = "openai"
        base_url = "{server.url}/v1"
        timeout = 0.5
        """,
    )
    server.answer(Reply(completion("late"), delay=1.5))

    with pytest.raises(ModelError) as raised:
        await resolve_model("cpu:small").complete(ACT, ordinal=0)

    # A server slower than the endpoint allows: retryable, as every timeout.
    assert raised.value.retryable
    assert str(raised.value) == f"cpu:small: no answer from {server.url}/v1 within 0.5 s"
    configure(tmp_path, monkeypatch, '[endpoints.box]\nprovider = "ollama"\ntimeout = 900\n')
    assert resolve_model("box:llama3.1").timeout == 900.0  # type: ignore[attr-defined]


def test_a_named_endpoint_s_priced_as_is_the_model_its_calls_are_priced_as(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(
        tmp_path,
        monkeypatch,
        """
        [endpoints.gw]
        provider = "openai"
        base_url = "http://127.0.0.1:9/v1"
        priced_as = "openai:gpt-4o"

        [endpoints.local]
        provider = "openai"
        base_url = "http://127.0.0.1:9/v1"
        """,
    )

    assert priced_model(resolve_model("gw:my-gpt")) == ("openai", "gpt-4o", None)
    assert priced_model(resolve_model("local:my-gpt")) == ("local", "my-gpt", "http://127.0.0.1:9/v1")


def test_the_config_file_is_found_in_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ratchet.toml").write_text(
        '[endpoints.box]\nprovider = "ollama"\nbase_url = "http://box:11434/v1"\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RATCHET_CONFIG", raising=False)
    model = resolve_model("box:llama3.1")
    assert (model.name, model.base_url) == ("box:llama3.1", "http://box:11434/v1")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("table", "says"),
    [
        (
            'provider = "openai"\napi_key_env = "UNSET_KEY"',
            "reads its API key from UNSET_KEY, which is not set",
        ),
        ('provider = "openai"\napi_key = "sk-x"', "write no key in the file"),
        ('provider = "nosuch"', "names provider 'nosuch', which is unknown"),
        ('provider = "openai"\nbase_url = "gpu-box:8000"', "base_url must be an http(s) URL"),
        ('provider = "openai"\nmodel = "x"', "unknown key 'model'"),
        ('provider = "scripted"\nbase_url = "http://x/v1"', "provider 'scripted' takes no base_url"),
        ("base_url = 'http://x/v1'", "give provider"),
        ('provider = "openai"\ntimeout = 0', "timeout must be a number of seconds above 0, at most 86400"),
        ('provider = "openai"\ntimeout = "10m"', "timeout must be a number of seconds"),
        ('provider = "openai"\ntimeout = true', "timeout must be a number of seconds"),
        ('provider = "openai"\ntimeout = inf', "timeout must be a number of seconds"),
        ('provider = "scripted"\ntimeout = 5', "provider 'scripted' takes no timeout"),
    ],
)
def test_a_bad_endpoint_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str, says: str
) -> None:
    configure(tmp_path, monkeypatch, f"[endpoints.gpu]\n{table}\n")
    monkeypatch.delenv("UNSET_KEY", raising=False)
    with pytest.raises(InputError) as raised:
        resolve_model("gpu:m")
    assert says in raised.value.message
    assert str(tmp_path / "ratchet.toml") in raised.value.message
    assert "\n" not in raised.value.message


def test_a_config_file_that_is_not_toml_or_missing_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(tmp_path, monkeypatch, "[endpoints.gpu\n")
    with pytest.raises(InputError, match="is not valid TOML"):
        resolve_model("gpu:m")
    monkeypatch.setenv("RATCHET_CONFIG", str(tmp_path / "none.toml"))
    with pytest.raises(InputError, match=r"RATCHET_CONFIG names .*none\.toml, which does not exist"):
        resolve_model("gpu:m")


def test_the_cli_checks_an_endpoint_before_any_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(tmp_path, monkeypatch, '[endpoints.gpu]\nprovider = "openai"\napi_key_env = "UNSET_KEY"\n')
    done = ratchet_cli(tmp_path, "run", "x", "--model", "gpu:m", "--store", "memory://", drop=("UNSET_KEY",))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("error: endpoint 'gpu' (")
    assert done.stderr.endswith("reads its API key from UNSET_KEY, which is not set\n")
    assert done.stderr.count("\n") == 1


def test_openai_without_a_key_for_the_public_api_exits_2_before_any_task(tmp_path: Path) -> None:
    done = ratchet_cli(
        tmp_path, "run", "x", "--model", "openai:gpt-4o-mini", "--store", "memory://", drop=("OPENAI_",)
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: openai:gpt-4o-mini needs an API key for https://api.openai.com/v1: set OPENAI_API_KEY, "
        "or point OPENAI_BASE_URL at your OpenAI-compatible server\n"
    )
