"""The package exports exactly its curated public names, and importing it imports none of them."""

import subprocess
import sys

import ratchet

PUBLIC_NAMES = [
    "Agent",
    "AgentState",
    "Artifact",
    "Budget",
    "BudgetExceeded",
    "Call",
    "CannotResume",
    "CannotRetry",
    "Checkpoint",
    "CheckpointPolicy",
    "CheckpointStrategy",
    "Child",
    "Compaction",
    "ConflictError",
    "Context",
    "DEFAULT_STORE_URL",
    "DeadlineExceeded",
    "Event",
    "InputError",
    "InvalidInputs",
    "InvalidModelOutput",
    "InvalidResult",
    "InvalidTransition",
    "Lease",
    "LeaseLost",
    "MCPServer",
    "Message",
    "Middleware",
    "ModelSettings",
    "NonDeterminismError",
    "NonRetryableError",
    "Operation",
    "OperationFailed",
    "Plan",
    "RatchetError",
    "Reconciled",
    "RetryPolicy",
    "Runtime",
    "Session",
    "StatePatch",
    "StateStore",
    "Step",
    "StepStatus",
    "StoreError",
    "SyncRuntime",
    "Task",
    "TaskNotCompleted",
    "TaskNotFound",
    "TaskStatus",
    "Tool",
    "ToolContext",
    "Trigger",
    "WaitReason",
    "Worker",
    "WorkerIdentity",
    "Workflow",
    "__version__",
    "open_store",
    "register_provider",
    "tool",
    "workflow",
]


def test_all_is_the_curated_list() -> None:
    assert sorted(ratchet.__all__) == PUBLIC_NAMES


def test_every_public_name_of_the_package_is_in_all() -> None:
    """A name defined without a leading underscore is exported, and every exported name is defined."""
    for name in ratchet.__all__:
        getattr(ratchet, name)  # each is imported on first use
    public = {
        name
        for name, value in vars(ratchet).items()
        if not name.startswith("_") and not isinstance(value, type(ratchet))
    }
    assert public == set(ratchet.__all__) - {"__version__"}
    assert isinstance(ratchet.__version__, str)


def test_importing_the_package_imports_nothing_else() -> None:
    """The `ratchet` program makes Ctrl-C its own before it imports the runtime (ratchet.cli.interrupts)."""
    code = "import sys, ratchet; print(sorted(m for m in sys.modules if m.startswith('ratchet')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert done.stdout.strip() == "['ratchet']"


# What a program that only runs workflows never uses, so never pays for at import: the model
# providers and their client libraries, the agent loop, the HTTP server (FastAPI on uvicorn), the
# MCP server and client, the chat front end, and the optional metrics and tracing libraries.
NOT_EAGER = (
    "ratchet.providers",
    "ratchet.agent",
    "ratchet.chat",
    "ratchet.serve",
    "ratchet.mcp",
    "ratchet.runtime",
    "ratchet.cli",
    "openai",
    "anthropic",
    "litellm",
    "pydantic_ai",
    "fastapi",
    "starlette",
    "uvicorn",
    "mcp",
    "httpx",
    "opentelemetry",
    "prometheus_client",
)


def loaded_after(code: str) -> set[str]:
    """The modules a new interpreter holds once it has run `code`."""
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys; print(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(done.stdout.split())


def among(modules: set[str], parts: tuple[str, ...]) -> list[str]:
    """The modules that are one of `parts` or inside one."""
    return sorted(name for name in modules if any(name == p or name.startswith(f"{p}.") for p in parts))


def test_importing_the_package_loads_no_provider_agent_nor_server() -> None:
    modules = loaded_after("import ratchet")

    assert among(modules, NOT_EAGER) == []
    assert among(modules, ("ratchet.engine", "ratchet.store", "pydantic")) == []


def test_a_workflow_program_loads_the_engine_but_no_provider_agent_nor_server() -> None:
    """Defining workflows and tools and running them on a worker imports what they use, only."""
    modules = loaded_after(
        "import ratchet\n"
        "@ratchet.tool\n"
        "async def noop() -> None: ...\n"
        "@ratchet.workflow(tools=[noop])\n"
        "async def flow(ctx: ratchet.Context) -> None: ...\n"
        "ratchet.Worker, ratchet.open_store, ratchet.RetryPolicy, ratchet.Task"
    )

    assert {"ratchet.engine.run.worker", "ratchet.store"} <= modules
    assert among(modules, NOT_EAGER) == []
