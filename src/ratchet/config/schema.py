"""What ``ratchet.toml`` may say, checked by pydantic, and a mistake in it said in one line.

Each section is a frozen model that forbids unknown keys and takes TOML's
types as they are (strict: ``concurrency = "4"`` is a mistake, not 4):

- ``[store] url``, ``[model] default``, ``[log] level``/``format`` and
  ``[worker] ...``: the settings a command also takes as a flag and an
  environment variable (`ENVIRONMENT` pairs each key with its variable);
- ``[endpoints.NAME]``: the named model endpoints (`ratchet.providers.endpoints`).

A key left out is not set: the command's flag, its variable or its built-in
default decides. The bounds are the flags' (`ratchet.limits`), so a value
the file may hold is one the flag would take.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..errors import InputError
from ..limits import MAX_CONCURRENCY, MAX_SECONDS
from ..policy import parse_duration

__all__ = [
    "ENVIRONMENT",
    "MAX_TIMEOUT",
    "EndpointSection",
    "LogSection",
    "ModelSection",
    "ProjectConfig",
    "StoreSection",
    "WorkerSection",
    "config_problem",
]

# A day: an exchange that may take longer is not waiting for a model.
MAX_TIMEOUT = 86400.0

# Each setting, by (section, key), and the environment variable that gives it too: the same name
# a command's option reads (`ratchet.cli.config_file` matches them), so one key means one option.
ENVIRONMENT: dict[tuple[str, str], str] = {
    ("store", "url"): "RATCHET_STORE",
    ("model", "default"): "RATCHET_MODEL",
    ("log", "level"): "RATCHET_LOG_LEVEL",
    ("log", "format"): "RATCHET_LOG_FORMAT",
    ("worker", "concurrency"): "RATCHET_WORKER_CONCURRENCY",
    ("worker", "name"): "RATCHET_WORKER_NAME",
    ("worker", "lease_ttl"): "RATCHET_WORKER_LEASE_TTL",
    ("worker", "poll"): "RATCHET_WORKER_POLL",
    ("worker", "grace"): "RATCHET_WORKER_GRACE",
    ("worker", "workflows"): "RATCHET_WORKER_WORKFLOWS",
    ("worker", "metrics_port"): "RATCHET_WORKER_METRICS_PORT",
    ("worker", "metrics_host"): "RATCHET_WORKER_METRICS_HOST",
    ("worker", "retain"): "RATCHET_WORKER_RETAIN",
    ("worker", "compatible_versions"): "RATCHET_COMPATIBLE_VERSIONS",
}

_Text = Annotated[str, StringConstraints(min_length=1)]


def _lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


def _some_time(text: str) -> str:
    try:
        seconds = parse_duration(text)
    except InputError as error:
        raise ValueError(error.message) from None  # a ValueError is what pydantic reports
    if seconds <= 0:
        raise ValueError("no time")
    return text


# How long an ended task is kept, by its status (`ratchet.engine.retention`): completed, failed, cancelled.
_Ended = Literal["completed", "failed", "cancelled"]
_Duration = Annotated[str, AfterValidator(_some_time)]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class StoreSection(_Section):
    """``[store]``: where the commands keep their state."""

    url: _Text | None = Field(
        default=None,
        description="a store URL: sqlite:///PATH, postgresql://USER@HOST/DB or memory://",
    )


class ModelSection(_Section):
    """``[model]``: the model an agent uses when the command names none, or its fallback chain."""

    default: _Text | Annotated[list[_Text], Field(min_length=1)] | None = Field(
        default=None,
        description='a model string, provider:name (e.g. "openai:gpt-4o-mini"), or a list of them: '
        "a fallback chain, each next model called when the one before fails for good",
    )


class LogSection(_Section):
    """``[log]``: what the long-running commands log to stderr, and how."""

    level: Annotated[Literal["debug", "info", "warning", "error"] | None, BeforeValidator(_lower)] = Field(
        default=None, description='one of "debug", "info", "warning" or "error"'
    )
    format: Annotated[Literal["text", "json"] | None, BeforeValidator(_lower)] = Field(
        default=None, description='"text" (a line for people) or "json" (one JSON object a line)'
    )


class WorkerSection(_Section):
    """``[worker]``: how `ratchet worker` runs tasks (``lease_ttl`` also `resume` and `retry`)."""

    concurrency: int | None = Field(
        default=None,
        ge=1,
        le=MAX_CONCURRENCY,
        description=f"a whole number of tasks run at once, from 1 to {MAX_CONCURRENCY}",
    )
    name: _Text | None = Field(default=None, description="the name the worker holds its leases under (text)")
    lease_ttl: float | None = Field(
        default=None,
        ge=1.0,
        le=MAX_SECONDS,
        description=f"a number of seconds from 1 to {MAX_SECONDS:g}",
    )
    poll: float | None = Field(
        default=None,
        ge=0.01,
        le=MAX_SECONDS,
        description=f"a number of seconds from 0.01 to {MAX_SECONDS:g}",
    )
    grace: float | None = Field(
        default=None,
        ge=0.0,
        le=MAX_SECONDS,
        description=f"a number of seconds from 0 to {MAX_SECONDS:g}",
    )
    workflows: list[_Text] | None = Field(
        default=None, description='a list of modules or .py files to import first, e.g. ["myapp.agents"]'
    )
    metrics_port: int | None = Field(
        default=None, ge=1, le=65535, description="a port number from 1 to 65535"
    )
    metrics_host: _Text | None = Field(
        default=None, description='the address metrics_port listens on, e.g. "0.0.0.0"'
    )
    retain: dict[_Ended, _Duration] | None = Field(
        default=None,
        description="a table of how long an ended task is kept, by status (completed, failed or "
        'cancelled), each a duration: [worker.retain] completed = "30d"',
    )
    compatible_versions: bool | None = Field(
        default=None, description="true or false: run tasks of another code version whose journal replays"
    )


class EndpointSection(_Section):
    """``[endpoints.NAME]``: a named model endpoint (docs/providers.md, "Named endpoints")."""

    provider: _Text = Field(
        description='the protocol it speaks, a provider prefix (e.g. provider = "openai")'
    )
    base_url: Annotated[str, StringConstraints(pattern=r"^https?://\S+$")] | None = Field(
        default=None, description='an http(s) URL, e.g. "http://gpu-box:8000/v1"'
    )
    api_key_env: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = Field(
        default=None, description='the name of an environment variable, e.g. "GPU_BOX_KEY"'
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT,
        description=f"a number of seconds above 0, at most {MAX_TIMEOUT:g}",
    )
    # Whether a price table knows the model is checked where the endpoint is used (ratchet.pricing).
    priced_as: Annotated[str, StringConstraints(pattern=r"^[^:\s]+:\S+$")] | None = Field(
        default=None,
        description='the model its calls bill as, provider:name (e.g. priced_as = "openai:gpt-4o")',
    )

    @model_validator(mode="before")
    @classmethod
    def _no_key_in_the_file(cls, table: Any) -> Any:
        if isinstance(table, dict) and "api_key" in table:
            raise PydanticCustomError(
                "key_in_file",
                "write no key in the file; put it in an environment variable "
                "and name that variable with api_key_env",
            )
        return table


# An endpoint's name is the prefix of model strings: as a provider's prefix is spelled.
_EndpointName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_.-]{0,63}$")]


class ProjectConfig(_Section):
    """Everything ``ratchet.toml`` says; a section left out is empty."""

    store: StoreSection = StoreSection()
    model: ModelSection = ModelSection()
    log: LogSection = LogSection()
    worker: WorkerSection = WorkerSection()
    endpoints: dict[_EndpointName, EndpointSection] = Field(default_factory=dict)

    def settings(self) -> dict[str, object]:
        """The settings the file gives, by the environment variable that gives each too."""
        given: dict[str, object] = {}
        for (section, key), variable in ENVIRONMENT.items():
            value = getattr(getattr(self, section), key)
            if isinstance(value, dict):  # a table is a repeated option: --retain completed=30d
                value = [f"{name}={setting}" for name, setting in value.items()]
            if value is not None:
                given[variable] = value
        return given


# --------------------------------------------------------------------------- one line per mistake

_SECTIONS = "[store], [model], [log], [worker] and [endpoints.NAME]"


def config_problem(path: Path, error: ValidationError) -> str:
    """The first mistake `error` found in the file at `path`, in one line: where, and what to write."""
    first = error.errors()[0]
    loc = [str(part) for part in first["loc"]]
    kind = first["type"]
    if not loc:
        return f"{path}: {first['msg']}"
    section = loc[0]
    if section not in ProjectConfig.model_fields:
        if isinstance(first["input"], dict):
            return f"{path}: unknown section [{section}]; the sections are {_SECTIONS}"
        return f"{path}: unknown key {section!r} outside any section; the sections are {_SECTIONS}"
    if section == "endpoints":
        return _endpoint_problem(path, loc[1:], kind, first["msg"])
    where = f"{path}, [{section}]"
    if len(loc) == 1:
        return f"{path}: {section} must be a table of settings, written [{section}]"
    return _key_problem(where, _section_model(section), loc[1], kind, first["msg"])


def _endpoint_problem(path: Path, loc: list[str], kind: str, message: str) -> str:
    if not loc:
        return f"{path}: endpoints must be a table of [endpoints.NAME] tables"
    where = f"{path}, [endpoints.{loc[0]}]"
    if loc[1:] == ["[key]"]:
        return f"{where}: name an endpoint with lower-case letters, digits, '_', '-' or '.'"
    if len(loc) == 1:
        if kind in ("model_type", "model_attributes_type", "dict_type"):
            return f"{where}: must be a table with provider, base_url and api_key_env"
        return f"{where}: {message}"
    return _key_problem(where, EndpointSection, loc[1], kind, message)


def _key_problem(where: str, model: type[BaseModel], key: str, kind: str, message: str) -> str:
    fields = model.model_fields
    if kind == "extra_forbidden" or key not in fields:
        return f"{where}: unknown key {key!r}; the keys are {', '.join(fields)}"
    expected = fields[key].description
    if kind == "missing":
        return f"{where}: give {key}, {expected}"
    return f"{where}: {key} must be {expected}"


def _section_model(section: str) -> type[BaseModel]:
    model = ProjectConfig.model_fields[section].annotation
    assert isinstance(model, type) and issubclass(model, BaseModel)  # every section but endpoints
    return model
