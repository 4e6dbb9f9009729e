"""storage/ is the room every other room imports: it imports nothing internal, and no circle runs
through its modules (counting imports inside functions, which hide a circle from import time only)."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROOMS = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return {m for m in found if m.split(".")[0] in ROOMS}


def test_storage_imports_no_other_room_and_has_no_circle():
    graph: dict[str, set[str]] = {}
    for path in sorted((ROOT / "storage").glob("*.py")):
        module = f"storage.{path.stem}"
        graph[module] = _imports(path)
        assert {m.split(".")[0] for m in graph[module]} <= {"storage"}, f"{module} imports {graph[module]}"
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise AssertionError(f"import circle: {' -> '.join(exc.args[1])}") from None
