"""Portability lint: what in a script's source ties it to CUDA or will not run well on a
NeuronCore. Static (an AST walk), so it also covers code paths the run did not take."""

import ast
from dataclasses import asdict, dataclass
from typing import Any

_NON_DETERMINISTIC = {
    "index_add_",
    "index_add",
    "scatter_add_",
    "scatter_add",
    "index_put_",
    "put_",
    "bincount",
    "histc",
    "embedding_bag",
    "scatter_reduce",
    "scatter_reduce_",
}
_DATA_DEPENDENT = {"nonzero", "unique", "unique_consecutive", "masked_select", "argwhere"}
_FLOAT64 = {"float64", "double", "complex128", "cdouble"}
_EXTENSION_MODULES = ("torch.utils.cpp_extension",)
_EXTENSION_CALLS = {"load_inline", "CUDAExtension", "CppExtension", "BuildExtension"}
_TORCH_OP_NAMESPACES = {"aten", "prims", "quantized", "profiler", "_c10d_functional", "c10d"}


@dataclass(frozen=True)
class Finding:
    rule: str  # hard-coded-cuda, torch-cuda-call, float64, custom-extension, ...
    line: int
    code: str
    advice: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_ADVICE = {
    "hard-coded-cuda": "use torch.accelerator.current_accelerator() or a device argument",
    "torch-cuda-call": "use torch.accelerator.* (or torch.neuron.*) instead of torch.cuda.*",
    "float64": "NeuronCores have no float64: it runs on the host fallback; use float32",
    "custom-extension": "a custom C++/CUDA extension has no neuron kernel: host or failure",
    "non-deterministic": "accumulating scatter/index ops may differ run to run on accelerators",
    "data-dependent-shape": "shape depends on values: forces a device sync, breaks graphs",
    "custom-autograd-function": "custom autograd.Function: its backward is user code, compared too",
}


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


class _Visitor(ast.NodeVisitor):
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.findings: list[Finding] = []
        self._seen: set[tuple[str, int]] = set()

    def add(self, rule: str, node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        if (rule, line) in self._seen:
            return
        self._seen.add((rule, line))
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        self.findings.append(Finding(rule, line, code, _ADVICE[rule]))

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and (node.value == "cuda" or node.value.startswith("cuda:")):
            self.add("hard-coded-cuda", node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = _dotted(node)
        if dotted.startswith("torch.cuda.") or dotted == "torch.cuda":
            self.add("torch-cuda-call", node)
        elif node.attr in _FLOAT64 and dotted.startswith(("torch.", "np.", "numpy.")):
            self.add("float64", node)
        elif dotted.startswith("torch.ops.") and dotted.count(".") >= 2:
            if dotted.split(".")[2] not in _TORCH_OP_NAMESPACES:
                self.add("custom-extension", node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "cuda" and isinstance(func, ast.Attribute):
            self.add("hard-coded-cuda", node)
        elif name == "double" and isinstance(func, ast.Attribute) and not node.args:
            self.add("float64", node)
        elif name in _EXTENSION_CALLS:
            self.add("custom-extension", node)
        elif name in _NON_DETERMINISTIC:
            self.add("non-deterministic", node)
        elif name in _DATA_DEPENDENT:
            self.add("data-dependent-shape", node)
        for keyword in node.keywords:
            if keyword.arg == "dtype" and isinstance(keyword.value, ast.Constant):
                if keyword.value.value in ("float64", "double"):
                    self.add("float64", keyword.value)
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.startswith(_EXTENSION_MODULES):
                self.add("custom-extension", node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if (node.module or "").startswith(_EXTENSION_MODULES):
            self.add("custom-extension", node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if _dotted(base).endswith("autograd.Function") or _dotted(base) == "Function":
                self.add("custom-autograd-function", node)
        self.generic_visit(node)


def lint_source(source: str) -> list[Finding]:
    """Findings of every rule in ``source``, by line. A syntax error yields no findings (the
    run reports it)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    visitor = _Visitor(source.splitlines())
    visitor.visit(tree)
    return sorted(visitor.findings, key=lambda f: (f.line, f.rule))


def lint_file(path: str) -> list[Finding]:
    with open(path, encoding="utf-8", errors="replace") as f:
        return lint_source(f.read())
