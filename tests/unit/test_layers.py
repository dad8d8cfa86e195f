"""Layers point down only: no import cycle among Ratchet's modules or its packages, type-only imports too.

The graph is read from the source with `ast`, so it sees every import: at
module level, under ``if TYPE_CHECKING:``, and inside functions. Its edges:

- ``import a.b`` imports the module ``a.b`` (a package: its ``__init__``);
- ``from a import b`` imports ``a.b`` when ``b`` is a submodule, else ``a``;
- relative imports are resolved against the importing module's package.

A module does not count as importing the packages above it (Python runs their
``__init__`` first, but uses nothing of them), so a package ``__init__`` that
re-exports its own submodules makes a cycle only if one of them imports the
package back: a real cycle.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable
from pathlib import Path

import ratchet

SRC = Path(ratchet.__file__).parent


def module_names(root: Path) -> dict[str, Path]:
    """Every module under the package directory `root`, by dotted name (packages by their own)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterable[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = package[: len(package) - node.level + 1]
        target = ".".join([*base, *([node.module] if node.module else [])])
    else:
        target = node.module or ""
    return [target, *(f"{target}.{alias.name}" for alias in node.names)]


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same tree it imports, anywhere in its source."""
    modules = module_names(root)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = list(_imported(node, module, is_package))
            submodules = [name for name in names[1:] if name in modules]
            if isinstance(node, ast.ImportFrom) and len(submodules) < len(node.names):
                submodules.append(names[0])  # some name is an attribute of the package itself
            elif isinstance(node, ast.Import):
                submodules = [name for name in names if name in modules]
            edges.update(name for name in submodules if name in modules and name != module)
        graph[module] = edges
    return graph


def tangles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The groups of two or more modules that all import each other, directly or not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(start: str) -> None:
        # Tarjan's algorithm, iterative: a deep import chain must not hit the recursion limit.
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(group)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return groups


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (``[a, b, ..., a]``) per tangle of modules, if any."""
    return [_cycle_in(graph, group) for group in tangles(graph)]


def _cycle_in(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest cycle through the group's first module (breadth-first, inside the group)."""
    start = min(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & group):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle in the group {sorted(group)}")


def test_ratchet_has_no_import_cycle() -> None:
    graph = import_graph(SRC)
    found = []
    for group in tangles(graph):
        cycle = _cycle_in(graph, group)
        others = sorted(group - set(cycle))
        found.append(" -> ".join(cycle) + (f" (tangled with: {', '.join(others)})" if others else ""))
    assert not found, "import cycles among ratchet's modules:\n" + "\n".join(f"  {line}" for line in found)


def top_level_unit(module: str) -> str:
    """The unit of Ratchet a module belongs to: its package right below the root (``ratchet.engine``
    for ``ratchet.engine.calls.call``), or itself when it is a loose module (``ratchet.runtime``)."""
    return ".".join(module.split(".")[:2])


def unit_graph(graph: dict[str, set[str]]) -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    """The module graph collapsed to top-level units; and for each edge, one import that makes it."""
    units: dict[str, set[str]] = {}
    because: dict[tuple[str, str], str] = {}
    for module, imported_modules in sorted(graph.items()):
        unit = top_level_unit(module)
        units.setdefault(unit, set())
        for imported in sorted(imported_modules):
            other = top_level_unit(imported)
            if other != unit:
                units[unit].add(other)
                because.setdefault((unit, other), f"{module} imports {imported}")
    return units, because


def test_ratchet_has_no_import_cycle_between_packages() -> None:
    """A package may import another, or be imported by it, not both: even when no module cycles,
    ``engine.x -> observe.y`` and ``observe.z -> engine.w`` make the two one tangle."""
    units, because = unit_graph(import_graph(SRC))
    found = []
    for group in tangles(units):
        cycle = _cycle_in(units, group)
        others = sorted(group - set(cycle))
        found.append(" -> ".join(cycle) + (f" (tangled with: {', '.join(others)})" if others else ""))
        found += [f"    {because[edge]}" for edge in itertools.pairwise(cycle)]
    assert not found, "import cycles among ratchet's packages:\n" + "\n".join(f"  {line}" for line in found)


# The map: every top-level unit of Ratchet (a package right below the root, or a loose module),
# from the bottom layer up. A unit imports only units listed before it. The README's "Layout" names
# the same units in the same order, and docs/architecture.md says what each is. The package itself
# (`ratchet`, its __init__) is the public face above them all and imports lazily.
LAYERS = (
    "_distribution",
    "errors",
    "limits",
    "policy",
    "printable",
    "validation",
    "config",
    "json_text",
    "pricing",
    "records",
    "model",
    "store",
    "trust",
    "sessions",
    "schedules",
    "tools",
    "providers",
    "observe",
    "engine",
    "agent",
    "runtime",
    "testing",
    "views",
    "mcp",
    "chat",
    "serve",
    "integrations",
    "demo",
    "cli",
    "__main__",
)
README = SRC.parents[1] / "README.md"


def test_every_unit_is_on_the_map_and_nothing_else() -> None:
    units, _ = unit_graph(import_graph(SRC))
    assert sorted(top.removeprefix("ratchet.") for top in units if top != "ratchet") == sorted(LAYERS)


def test_no_unit_imports_one_above_it() -> None:
    units, because = unit_graph(import_graph(SRC))
    place = {f"ratchet.{unit}": number for number, unit in enumerate(LAYERS)}
    wrong = [
        f"{unit} imports {imported}, listed above it: {because[(unit, imported)]}"
        for unit, imported_units in sorted(units.items())
        if unit != "ratchet"
        for imported in sorted(imported_units)
        if place[imported] >= place[unit]
    ]
    assert not wrong, "a unit imports one above it:\n" + "\n".join(f"  {line}" for line in wrong)


def readme_layout(text: str) -> list[str]:
    """The units the README's "Layout" section names in its map of ``src/ratchet/``, in order.

    The map is the first fenced block of the section; a unit is a line indented by two spaces
    naming ``NAME/`` (a package) or ``NAME.py`` (a loose module).
    """
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    names = []
    for line in block.splitlines():
        if line.startswith("  ") and not line.startswith("   "):
            first = line.split()[0]
            if first.endswith("/"):
                names.append(first.removesuffix("/"))
            elif first.endswith(".py"):
                names.append(first.removesuffix(".py"))
    return names


def test_the_readme_layout_names_the_units_in_their_order() -> None:
    assert readme_layout(README.read_text(encoding="utf-8")) == list(LAYERS)


def test_the_readme_layout_reader_reads_packages_and_modules_only() -> None:
    text = (
        "# x\n\n## Layout\n\n```\nsrc/ratchet/\n"
        "  a.py   one\n         two.py\n  b/     three\n  py.typed\n```\n\n## Next\n"
    )
    assert readme_layout(text) == ["a", "b"]


# What each lower layer must never import (prefixes: "ratchet.cli" covers the CLI's modules too).
_APPS = ("ratchet.agent", "ratchet.chat", "ratchet.cli", "ratchet.demo", "ratchet.runtime")
BELOW = {
    "ratchet.trust.workspace": ("ratchet.",),
    "ratchet.trust.code": ("ratchet.",),
    "ratchet.store": ("ratchet.engine", "ratchet.providers", "ratchet.sessions", "ratchet.schedules", *_APPS),
    "ratchet.providers": ("ratchet.engine", "ratchet.store", "ratchet.sessions", *_APPS),
    "ratchet.schedules": ("ratchet.engine", *_APPS),
    "ratchet.sessions": ("ratchet.engine", *_APPS),
    "ratchet.observe": ("ratchet.engine", *_APPS),
    "ratchet.engine": _APPS,
}
# Leaves a lower layer may still import: code trust refuses what lies in a workspace, so it knows
# where workspaces are.
BENEATH = {"ratchet.trust.code": {"ratchet.trust.workspace"}}
PROVIDERS = (
    "ratchet.providers.anthropic",
    "ratchet.providers.litellm",
    "ratchet.providers.openai_compat",
    "ratchet.providers.scripted",
)


def test_lower_layers_import_no_higher_one() -> None:
    wrong = [
        f"{module} imports {imported}"
        for module, imported_modules in sorted(import_graph(SRC).items())
        for imported in sorted(imported_modules)
        for layer, above in BELOW.items()
        if module.startswith(layer)
        and imported.startswith(above)
        and imported not in {"ratchet.errors", "ratchet.records", *BENEATH.get(layer, ())}
    ]
    assert not wrong, "a layer imports one above it:\n" + "\n".join(f"  {line}" for line in wrong)


# The store's own layers, and what each may import: the interface (ops) knows no store; what every
# store shares (StateStore, its transaction, group commit, change feeds, URL redaction) knows the
# interface; the memory store and the SQL stores know both and never each other; the SQL written
# once knows no dialect, and a dialect no other. The package itself (a URL picks the store) knows all.
STORE_LAYERS = {
    "ops": {"ops"},
    "shared": {"ops", "shared"},
    "memory": {"ops", "shared", "memory"},
    "sql": {"ops", "shared", "sql"},
    "sqlite": {"ops", "shared", "sql", "sqlite"},
    "postgresql": {"ops", "shared", "sql", "postgresql"},
    "url": {"ops", "shared", "memory", "sql", "sqlite", "postgresql", "url"},
}


def store_layer(module: str) -> str:
    """The layer of a module of ``ratchet.store`` (see `STORE_LAYERS`)."""
    if module == "ratchet.store":
        return "url"
    for prefix, layer in (
        ("ratchet.store.ops", "ops"),
        ("ratchet.store.memory", "memory"),
        ("ratchet.store.sql.sqlite", "sqlite"),
        ("ratchet.store.sql.postgresql", "postgresql"),
        ("ratchet.store.sql", "sql"),
    ):
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return "shared"


def test_the_stores_layers_import_only_down() -> None:
    def in_store(module: str) -> bool:
        return module == "ratchet.store" or module.startswith("ratchet.store.")

    wrong = [
        f"{module} ({store_layer(module)}) imports {imported} ({store_layer(imported)})"
        for module, imported_modules in sorted(import_graph(SRC).items())
        if in_store(module)
        for imported in sorted(imported_modules)
        if in_store(imported) and store_layer(imported) not in STORE_LAYERS[store_layer(module)]
    ]
    assert not wrong, "a layer of the store imports one it must not:\n" + "\n".join(
        f"  {line}" for line in wrong
    )


def test_no_provider_imports_another_provider() -> None:
    graph = import_graph(SRC)
    assert {module: sorted(graph[module] & set(PROVIDERS)) for module in PROVIDERS} == {
        module: [] for module in PROVIDERS
    }


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_a_package_reexporting_its_submodules_is_no_cycle(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "pkg/__init__.py": "from .low import thing\nfrom .high import other\n",
            "pkg/low.py": "thing = 1\n",
            "pkg/high.py": "from .low import thing\nfrom pkg import low\nother = thing\n",
        },
    )
    graph = import_graph(root)
    assert graph == {"pkg": {"pkg.low", "pkg.high"}, "pkg.low": set(), "pkg.high": {"pkg.low"}}
    assert find_cycles(graph) == []


def test_finds_type_only_and_function_level_cycles(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "from .a import A\n",
            "pkg/sub/a.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..b import B\nA = 1\n"
            ),
            "pkg/b.py": "def f():\n    import pkg.c\nB = 2\n",
            "pkg/c.py": "from .sub import A\n",
        },
    )
    assert find_cycles(import_graph(root)) == [["pkg.b", "pkg.c", "pkg.sub", "pkg.sub.a", "pkg.b"]]


def test_packages_whose_modules_import_each_other_are_a_tangle(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low/__init__.py": "",
            "pkg/low/a.py": "from ..high.b import B\nA = 1\n",
            "pkg/low/c.py": "C = 3\n",
            "pkg/high/__init__.py": "",
            "pkg/high/b.py": "B = 2\n",
            "pkg/high/d.py": "from ..low.c import C\n",
            "pkg/loose.py": "from .low.c import C\n",
        },
    )
    graph = import_graph(root)
    units, because = unit_graph(graph)

    assert find_cycles(graph) == []
    assert units == {"pkg": set(), "pkg.low": {"pkg.high"}, "pkg.high": {"pkg.low"}, "pkg.loose": {"pkg.low"}}
    assert find_cycles(units) == [["pkg.high", "pkg.low", "pkg.high"]]
    assert because[("pkg.low", "pkg.high")] == "pkg.low.a imports pkg.high.b"


def test_a_submodule_importing_its_package_back_is_a_cycle(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "pkg/__init__.py": "from .mod import f\nX = 1\n",
            "pkg/mod.py": "def f():\n    from . import X\n    return X\n",
        },
    )
    assert find_cycles(import_graph(root)) == [["pkg", "pkg.mod", "pkg"]]
