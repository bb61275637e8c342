"""The package's layers: every import of src/treeattn (at module level or inside a
function) points at the same layer or one below, and no module reaches itself again.

The order below is the one docs/guides/architecture.md describes, lowest first; a package
may import any package of a lower layer and none of a higher one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "treeattn"

LAYERS = (
    ("errors", "plugins"),
    ("utf8",),
    ("write_aside",),
    ("trees",),
    ("structs", "metrics", "viz"),
    ("data",),
    ("attention",),
    ("engine",),
    ("models",),
    ("parsing",),
    ("tasks",),
    ("analysis", "demo", "demo_generalization", "integrations", "evaluation", "testing"),
    ("cli",),
)
LAYER_OF = {part: level for level, parts in enumerate(LAYERS) for part in parts}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path, known: set[str]) -> set[str]:
    """The modules of the package that ``path`` imports, wherever the import statement
    stands (``from a.b import c`` names the module ``a.b.c`` where that is one)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                found.add(child if child in known else node.module)
    return {name for name in found if name in known}


def layer(module: str) -> int:
    part = module.split(".")[1] if "." in module else ""
    if part not in LAYER_OF:
        raise AssertionError(
            f"{module} belongs to no layer: add it to LAYERS (and docs/guides/architecture.md)"
        )
    return LAYER_OF[part]


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports(path, set(found)) for name, path in found.items()}


def test_every_package_has_a_layer():
    names = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    names |= {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert names == set(LAYER_OF)


def test_no_import_reaches_a_higher_layer(graph):
    upward = [
        f"{source} ({LAYERS[layer(source)][0]}) imports {target} ({LAYERS[layer(target)][0]})"
        for source, targets in graph.items()
        if source != "treeattn"
        for target in targets
        if target != "treeattn" and layer(target) > layer(source)
    ]
    assert not upward, "\n".join(upward)


def test_no_module_imports_itself_through_others(graph):
    """Depth-first search for a cycle; the package's ``__init__`` files that import their
    own modules (to register them) count like any module."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[name] = 2
        return None

    for name in sorted(graph):
        if name not in state and (cycle := visit(name)):
            pytest.fail("import cycle: " + " -> ".join(cycle))


def test_the_checks_see_a_cycle_and_an_upward_import():
    graph = {"treeattn.trees.a": {"treeattn.trees.b"}, "treeattn.trees.b": {"treeattn.trees.a"}}
    with pytest.raises(pytest.fail.Exception, match="trees.a -> treeattn.trees.b"):
        test_no_module_imports_itself_through_others(graph)
    with pytest.raises(AssertionError, match="imports treeattn.tasks.c"):
        test_no_import_reaches_a_higher_layer({"treeattn.trees.a": {"treeattn.tasks.c"}})
