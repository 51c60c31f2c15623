"""The layering rules, read from the sources: which C++ folder may include which, that the
torch-free libraries include no torch header, and that python/openneuron has no import cycle.

Each checker also runs on a small tree planted with violations, so a checker that stopped
seeing includes or imports fails here instead of passing quietly.
"""

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CSRC = REPO / "csrc"
PACKAGE = REPO / "python" / "openneuron"

# The C++ layers, lowest first: a folder includes headers of its own folder and of lower layers
# only. Folders of one layer are peers and include none of each other. (kernels and sim use no
# runtime header today; the layers allow them to.)
LAYERS = {
    "runtime": 0,
    "kernels": 1,
    "compiler": 2,
    "sim": 2,
    "distributed": 2,
    "adaptive": 3,
    "aten": 4,
}
# Everything but the bridge builds and is tested without PyTorch.
TORCH_FREE = sorted(folder for folder in LAYERS if folder != "aten")
TORCH_HEADER = re.compile(
    r"^(ATen|c10|torch|caffe2|pybind11|kineto)/"
    r"|^(Python\.h|libkineto\.h|IActivityProfiler\.h|GenericTraceActivity\.h)$"
)
# Bridge folders that only the build links: the registration lists and the module's entry
# point. No other file includes their headers.
BRIDGE_ENTRY_FOLDERS = ("register", "python")
# The bridge's core (device, allocators, guards, errors) is what every other bridge folder
# builds on, so it includes no other bridge folder.
BRIDGE_CORE = "aten/core/"
# Compiled modules of the package (built, so absent from a fresh checkout).
EXTENSION_MODULES = {"openneuron._C"}

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.M)
_SOURCE_SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".inc"}


def include_violations(csrc: Path) -> list[str]:
    """Every include in `csrc` that breaks a rule above, as "file: what is wrong"."""
    problems = []
    for path in sorted(p for p in csrc.rglob("*") if p.suffix in _SOURCE_SUFFIXES):
        relative = path.relative_to(csrc)
        folder = relative.parts[0]
        if folder not in LAYERS:
            problems.append(f"{relative}: csrc/{folder} is in no layer (add it to LAYERS)")
            continue
        for header in _INCLUDE.findall(path.read_text(errors="replace")):
            target = header.split("/")[0]
            if folder in TORCH_FREE and TORCH_HEADER.search(header):
                problems.append(f"{relative}: torch-free csrc/{folder} includes <{header}>")
            if target in LAYERS and target != folder and LAYERS[target] >= LAYERS[folder]:
                problems.append(
                    f"{relative}: csrc/{folder} (layer {LAYERS[folder]}) includes {header} "
                    f"(layer {LAYERS[target]})"
                )
            if (
                str(relative).startswith(BRIDGE_CORE)
                and header.startswith("aten/")
                and not header.startswith(BRIDGE_CORE)
            ):
                problems.append(f"{relative}: the bridge's core includes {header}")
            for entry in BRIDGE_ENTRY_FOLDERS:
                entry_prefix = f"aten/{entry}/"
                if header.startswith(entry_prefix) and not str(relative).startswith(entry_prefix):
                    problems.append(f"{relative}: includes {header}, an entry point of the bridge")
    return problems


def include_count(csrc: Path) -> int:
    return sum(
        len(_INCLUDE.findall(p.read_text(errors="replace")))
        for p in csrc.rglob("*")
        if p.suffix in _SOURCE_SUFFIXES
    )


def _module_names(package: Path) -> dict[str, Path]:
    names = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def import_graph(package: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports, at any depth of its code (a function-level
    import closes a cycle as surely as a top-level one, only later)."""
    modules = _module_names(package)
    root = package.name
    graph = {name: set() for name in modules}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            if name in EXTENSION_MODULES:
                return None
            name = name.rpartition(".")[0]
        return name or None

    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".") if is_package else name.split(".")[:-1]
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                # `from p import m` imports the module p.m when there is one, else p.
                targets = [
                    f"{base}.{alias.name}"
                    if f"{base}.{alias.name}" in modules
                    or f"{base}.{alias.name}" in EXTENSION_MODULES
                    else base
                    for alias in node.names
                ]
            else:
                continue
            for target in targets:
                if target.split(".")[0] != root:
                    continue
                resolved = resolve(target)
                if resolved is not None and resolved != name:
                    graph[name].add(resolved)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index, low, on_stack, stack, cycles = {}, {}, set(), [], []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph[module]):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


# ---------------------------------------------------------------- the real tree


def test_csrc_folders_include_only_lower_layers_and_no_torch_outside_the_bridge():
    assert include_count(CSRC) > 1000  # the checker reads the includes at all
    assert include_violations(CSRC) == []


def test_every_csrc_folder_has_a_layer():
    folders = {p.name for p in CSRC.iterdir() if p.is_dir()}
    assert folders == set(LAYERS)


def test_python_package_has_no_import_cycle():
    graph = import_graph(PACKAGE)
    # The checker sees imports at every depth: the device module's parts resolve devices
    # through device_selection, and nki.kernel's function-level import of _C is left out.
    assert "openneuron.device_selection" in graph["openneuron.memory"]
    assert "openneuron.nki.tensor" in graph["openneuron.nki.tile_operators"]
    assert import_cycles(graph) == []


# ---------------------------------------------------------------- planted violations


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_planted_includes_are_reported(tmp_path):
    _write(tmp_path, "runtime/stream.cpp", '#include "runtime/stream.h"\n#include <vector>\n')
    _write(tmp_path, "runtime/clean.h", "#pragma once\n#include <cstdint>\n")
    _write(tmp_path, "runtime/torchy.cpp", "#include <ATen/Tensor.h>\n")
    _write(tmp_path, "sim/binding.cpp", "  #  include <pybind11/pybind11.h>\n")
    _write(tmp_path, "kernels/upward.h", '#include "compiler/ir.h"\n')
    _write(tmp_path, "compiler/peer.cpp", '#include "sim/isa.h"\n#include "kernels/ok.h"\n')
    _write(tmp_path, "aten/ops/uses_torch.cpp", "#include <ATen/ATen.h>\n")
    _write(tmp_path, "aten/ops/entry.cpp", '#include "aten/register/list.h"\n')
    _write(tmp_path, "aten/register/list.cpp", '#include "aten/register/list.h"\n')
    _write(tmp_path, "aten/core/hooks.cpp", '#include "aten/core/a.h"\n#include "aten/ops/ops.h"\n')
    _write(tmp_path, "newlib/thing.cpp", "\n")
    problems = include_violations(tmp_path)
    assert problems == [
        "aten/core/hooks.cpp: the bridge's core includes aten/ops/ops.h",
        "aten/ops/entry.cpp: includes aten/register/list.h, an entry point of the bridge",
        "compiler/peer.cpp: csrc/compiler (layer 2) includes sim/isa.h (layer 2)",
        "kernels/upward.h: csrc/kernels (layer 1) includes compiler/ir.h (layer 2)",
        "newlib/thing.cpp: csrc/newlib is in no layer (add it to LAYERS)",
        "runtime/torchy.cpp: torch-free csrc/runtime includes <ATen/Tensor.h>",
        "sim/binding.cpp: torch-free csrc/sim includes <pybind11/pybind11.h>",
    ]


def test_planted_import_cycles_are_reported(tmp_path):
    package = tmp_path / "pkg"
    _write(package, "__init__.py", "from pkg import a\nfrom pkg import _C\n")
    _write(package, "a.py", "from pkg import b\nimport pkg.helpers\n")
    # Closed by a function-level import, as lazy imports hide cycles.
    _write(package, "b.py", "def late():\n    from pkg.a import value\n    return value\n")
    _write(package, "helpers.py", "import os\nimport numpy\n")
    _write(package, "sub/__init__.py", "from . import one\n")
    _write(package, "sub/one.py", "from .two import thing\n")
    _write(package, "sub/two.py", "from ..sub import one\n")
    _write(package, "clean.py", "from pkg.helpers import x\n")
    graph = import_graph(package)
    assert graph["pkg.clean"] == {"pkg.helpers"}
    assert import_cycles(graph) == [["pkg.a", "pkg.b"], ["pkg.sub.one", "pkg.sub.two"]]
