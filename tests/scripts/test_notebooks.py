"""A workflow defined in a Jupyter notebook's cell, on a real ipykernel driven by nbclient.

The notebook runs top to bottom: a cell defines the workflow (`ORDER`), a
cell runs its task and is interrupted (as the kernel's interrupt button
does) while the task waits between its two effects, and a later cell runs
the task again by its id, which resumes it in the same kernel. Meanwhile
``ratchet resume`` in a shell cannot find code that lives only in the
notebook: the task waits, saying so in one line that names the notebook.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient

from ratchet.records import TaskStatus
from ratchet.store import open_store

from ..helpers.cli import assert_one_line_error, ratchet_runner
from .support import ORDER, PATIENCE, ledger

RUN = """
async with ratchet.Runtime(os.environ["STORE"]) as rt:
    task = await rt.run(order, {"item": "book"}, task_id="nb-1")
print(task.id, task.status, task.result)
"""


async def _appears(path: Path) -> None:
    async with asyncio.timeout(PATIENCE):
        while not path.exists():
            await asyncio.sleep(0.05)


async def test_a_notebooks_task_interrupted_in_a_cell_resumes_in_a_later_cell(
    tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    # nbformat's v4 builders carry no annotations.
    notebook = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]
    notebook.cells = [nbformat.v4.new_code_cell(cell) for cell in (ORDER, RUN, RUN)]  # type: ignore[no-untyped-call]
    monkeypatch.setenv("STORE", url)
    # How Jupyter tells a kernel which notebook it runs (ipykernel puts it in `__session__`).
    monkeypatch.setenv("JPY_SESSION_NAME", str(project / "analysis.ipynb"))
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=int(PATIENCE * 2),
        allow_errors=True,
        resources={"metadata": {"path": str(project)}},
    )

    async with client.async_setup_kernel():
        await client.async_execute_cell(notebook.cells[0], 0)
        running = asyncio.ensure_future(client.async_execute_cell(notebook.cells[1], 1))
        await _appears(project / "waiting")
        assert isinstance(client.km, AsyncKernelManager)
        await client.km.interrupt_kernel()  # as the notebook's interrupt button does: SIGINT
        await running
        elsewhere = await asyncio.to_thread(ratchet_runner(project), "resume", "nb-1", "--store", url)
        (project / "go").touch()
        await client.async_execute_cell(notebook.cells[2], 2)

    [interrupted] = notebook.cells[1].outputs
    assert interrupted["output_type"] == "error"
    assert_one_line_error(
        elsewhere, "workflow order was defined in the notebook analysis.ipynb and lives only in the process"
    )
    assert [output.get("text") for output in notebook.cells[2].outputs] == [
        "nb-1 completed ['charge book', 'ship book']\n"
    ]
    assert ledger(project) == ["charge book", "ship book"]
    store = await open_store(url)
    try:
        [task] = await store.list_tasks()
        events = [(event.kind, event.message) for event in await store.list_events(task.id)]
    finally:
        await store.close()
    assert (task.id, task.workflow, task.status) == (
        "nb-1",
        "<interactive analysis.ipynb>:order",
        TaskStatus.COMPLETED,
    )
    # The shell's resume set it aside, waiting for its code; the kernel took it up again.
    assert [kind for kind, message in events if "the notebook analysis.ipynb" in message] == ["code_missing"]
