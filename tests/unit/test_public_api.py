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
