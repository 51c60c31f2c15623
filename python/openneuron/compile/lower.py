"""Lowers an ATen-level FX graph (from AOTAutograd) to the compiler's IR text.

Functional pointwise calls the device computes natively become ``pointwise`` nodes (the bridge
plans each one exactly as the eager kernel would: op, compute dtype, parameters, scalar
operands), dtype conversions and clones become ``cast`` nodes, size arithmetic becomes ``sym``
nodes, and every other call stays an ``extern`` ATen call with its full argument list. A node
the IR cannot express raises ``LoweringError`` naming it; the caller then runs the graph as is.
"""

from __future__ import annotations

import math
import operator

import torch
from torch.fx import GraphModule, Node

from openneuron import _C

# torch dtype -> (IR short name or None, c10 name), from the compiler's own spelling table
# (compiler/names.cpp) so the two never drift apart.
_DTYPES = {dtype: (short, c10_name) for dtype, short, c10_name in _C._compiler_dtype_names()}
# dtypes the fused kernels compute with (float64 and complex run through ATen calls).
_FUSABLE = {
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
}

_SYM_FUNCTIONS = {
    operator.add: "add",
    operator.sub: "sub",
    operator.mul: "mul",
    operator.floordiv: "floordiv",
    operator.mod: "mod",
    operator.neg: "neg",
}


# Reductions the compiler fuses with their producers (sum/mean without a dtype argument).
_REDUCTIONS = {
    torch.ops.aten.sum.dim_IntList: "sum",
    torch.ops.aten.mean.dim: "mean",
    torch.ops.aten.amax.default: "amax",
}
_REDUCIBLE = {torch.float16, torch.bfloat16, torch.float32}


class LoweringError(RuntimeError):
    """A graph node the IR cannot express."""


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(float(value))
    return text if any(c in text for c in ".e") else text + ".0"


def _dim_text(size) -> str:
    if isinstance(size, int):
        return str(size)
    constant = size.node.maybe_as_int() if hasattr(size.node, "maybe_as_int") else None
    return str(constant) if constant is not None else _quote(str(size))


def _hint(value) -> int | None:
    if isinstance(value, int):
        return value
    try:
        return int(value.node.hint) if value.node.hint is not None else None
    except Exception:  # noqa: BLE001 - unbacked or otherwise hintless: treat as row-major
        return None


def _dim_order(t: torch.Tensor) -> list[int]:
    strides = [_hint(s) for s in t.stride()]
    if any(s is None for s in strides):
        return list(range(t.dim()))
    return sorted(range(t.dim()), key=lambda d: -strides[d])


def _source_line(node: Node) -> str:
    trace = node.meta.get("stack_trace") or ""
    for line in reversed(trace.strip().splitlines()):
        line = line.strip()
        if line.startswith("File "):
            parts = line.split('"')
            if len(parts) >= 3:
                path = parts[1].rsplit("/", 1)[-1]
                number = parts[2].split("line")[-1].split(",")[0].strip()
                return f"{path}:{number}"
    return ""


class _Lowerer:
    def __init__(self, gm: GraphModule, reductions: bool = True):
        self.gm = gm
        self.reductions = reductions  # lower sum/mean/amax to reduce nodes (else extern calls)
        self.lines: list[str] = []
        self.next_id = 0
        self.value_of: dict[Node, object] = {}  # node -> value name (or tuple of names)
        self.stand_ins: dict[tuple, torch.Tensor] = {}
        self.pointwise_ops = 0
        self.extern_ops = 0
        self.constants: list[torch.Tensor] = []  # get_attr tensors, passed after the inputs

    # ---- values ----
    def new_value(self) -> str:
        name = f"%{self.next_id}"
        self.next_id += 1
        return name

    def type_text(self, val) -> str:
        if isinstance(val, torch.Tensor):
            short = _DTYPES.get(val.dtype, (None, None))[0]
            if short is None:
                raise LoweringError(f"tensors of dtype {val.dtype} are not expressible")
            dims = ", ".join(_dim_text(s) for s in val.shape)
            order = _dim_order(val)
            layout = (
                "" if order == list(range(val.dim())) else "{" + ", ".join(map(str, order)) + "}"
            )
            return f"{short}[{dims}]{layout}"
        if isinstance(val, (bool, int, torch.SymInt, torch.SymBool)):
            return "int"
        if isinstance(val, (float, torch.SymFloat)):
            return "float"
        if val is None:
            return "none"
        raise LoweringError(f"a value of type {type(val).__name__} is not expressible")

    def define(self, val) -> str:
        name = self.new_value()
        return f"{name}: {self.type_text(val)}"

    def ref(self, arg) -> str:
        if not isinstance(arg, Node):
            raise LoweringError(f"expected a graph value, got {arg!r}")
        value = self.value_of.get(arg)
        if not isinstance(value, str):
            raise LoweringError(f"{arg.name} is not a single value")
        return value

    # ---- attributes ----
    def attr(self, value, refs: list[str]) -> str:
        if isinstance(value, Node):
            name = self.ref(value)
            if name not in refs:
                refs.append(name)
            return name
        if value is None:
            return "none"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return _float_text(value)
        if isinstance(value, str):
            return _quote("str:" + value)
        if isinstance(value, torch.dtype):
            return _quote("dtype:" + _DTYPES[value][1])
        if isinstance(value, torch.device):
            return _quote("device:" + str(value))
        if isinstance(value, torch.layout):
            return _quote("layout:" + str(value).split(".")[-1])
        if isinstance(value, torch.memory_format):
            return _quote("memory_format:" + str(value).split(".")[-1])
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(self.attr(v, refs) for v in value) + "]"
        raise LoweringError(f"an argument of type {type(value).__name__} is not expressible")

    def emit(self, outputs: str, op: str, attrs: dict[str, str], inputs: list[str], node=None):
        if node is not None:
            src = _source_line(node)
            if src:
                attrs["src"] = _quote(src)
        attr_text = ", ".join(f"{k}={attrs[k]}" for k in sorted(attrs))
        bracket = f"[{attr_text}]" if attr_text else ""
        self.lines.append(f"  {outputs} = {op}{bracket}({', '.join(inputs)})")

    # ---- nodes ----
    def full_arguments(self, node: Node) -> list:
        schema = node.target._schema
        values = []
        for k, argument in enumerate(schema.arguments):
            if k < len(node.args) and not argument.kwarg_only:
                values.append(node.args[k])
            elif argument.name in node.kwargs:
                values.append(node.kwargs[argument.name])
            elif argument.has_default_value():
                values.append(argument.default_value)
            else:
                raise LoweringError(f"{node.name}: missing argument {argument.name}")
        return values

    def stand_in(self, val: torch.Tensor) -> torch.Tensor:
        key = (val.dim() == 0, val.dtype, str(val.device))
        if key not in self.stand_ins:
            shape = () if val.dim() == 0 else (0,) * val.dim()
            self.stand_ins[key] = torch.empty(shape, dtype=val.dtype, device=val.device)
        t = self.stand_ins[key]
        if val.dim() > 0 and t.dim() != val.dim():
            t = torch.empty((0,) * val.dim(), dtype=val.dtype, device=val.device)
        return t

    def try_pointwise(self, node: Node, val) -> bool:
        schema = node.target._schema
        if schema.is_mutable or not isinstance(val, torch.Tensor) or val.dtype not in _FUSABLE:
            return False
        if val.device.type != "neuron":
            return False
        args = self.full_arguments(node)
        plan_args = []
        for a in args:
            if isinstance(a, Node):
                v = a.meta.get("val")
                if not isinstance(v, torch.Tensor) or v.device.type != "neuron":
                    return False
                plan_args.append(self.stand_in(v))
            elif isinstance(a, (list, tuple)) and any(isinstance(x, Node) for x in a):
                return False
            else:
                plan_args.append(a)
        name = schema.name.split("::", 1)[1] + (
            f".{schema.overload_name}" if schema.overload_name else ""
        )
        plan = _C._compiler_plan_pointwise(name, plan_args)
        if plan is None or plan["result"] != _DTYPES[val.dtype][0]:
            return False
        inputs = []
        for operand in plan["operands"]:
            if operand[0] == "arg":
                inputs.append(self.ref(args[operand[1]]))
            else:
                _, number, dtype = operand
                scalar = self.new_value()
                text = _float_text(number) if isinstance(number, float) else str(number)
                self.emit(f"{scalar}: {dtype}[]", "scalar", {"value": text}, [])
                inputs.append(scalar)
        attrs = {"fn": _quote(plan["fn"]), "compute": _quote(plan["compute"])}
        for k, p in enumerate(plan["params"]):
            if p is not None:
                attrs[f"p{k}"] = _float_text(p) if isinstance(p, float) else str(p)
        out = self.define(val)
        self.value_of[node] = out.split(":")[0]
        self.emit(out, "pointwise", attrs, inputs, node)
        self.pointwise_ops += 1
        return True

    def try_cast(self, node: Node, val) -> bool:
        target = node.target
        if not isinstance(val, torch.Tensor) or val.dtype not in _FUSABLE:
            return False
        if target not in (
            torch.ops.aten._to_copy.default,
            torch.ops.aten.clone.default,
            torch.ops.prims.convert_element_type.default,
        ):
            return False
        source = node.args[0]
        src_val = source.meta.get("val") if isinstance(source, Node) else None
        if not isinstance(src_val, torch.Tensor) or src_val.dtype not in _FUSABLE:
            return False
        if src_val.device.type != "neuron" or val.device.type != "neuron":
            return False
        allowed = {"dtype", "memory_format", "non_blocking", "device", "layout"}
        if any(k not in allowed for k in node.kwargs):
            return False
        fmt = node.kwargs.get("memory_format")
        if fmt not in (None, torch.preserve_format):
            return False
        if node.kwargs.get("layout") not in (None, torch.strided):
            return False
        if _dim_order(val) != _dim_order(src_val) and src_val.dim() > 1:
            return False
        out = self.define(val)
        self.value_of[node] = out.split(":")[0]
        self.emit(out, "cast", {}, [self.ref(source)], node)
        self.pointwise_ops += 1
        return True

    def try_reduce(self, node: Node, val) -> bool:
        fn = _REDUCTIONS.get(node.target)
        if fn is None or not self.reductions or not isinstance(val, torch.Tensor):
            return False
        args = self.full_arguments(node)
        source, dims, keepdim = args[0], args[1], args[2]
        if fn != "amax" and args[3] is not None:
            return False
        src_val = source.meta.get("val") if isinstance(source, Node) else None
        if not isinstance(src_val, torch.Tensor) or src_val.dtype not in _REDUCIBLE:
            return False
        if val.dtype != src_val.dtype or not src_val.device.type == val.device.type == "neuron":
            return False
        rank = src_val.dim()
        if not dims or not 0 < rank <= 31 or any(type(d) is not int for d in dims):
            return False
        # Eager reads the input in memory order; the fused tiles are row-major.
        if _dim_order(src_val) != list(range(rank)):
            return False
        dims = sorted({d % rank for d in dims})
        out = self.define(val)
        self.value_of[node] = out.split(":")[0]
        attrs = {
            "fn": _quote(fn),
            "dims": "[" + ", ".join(map(str, dims)) + "]",
            "keepdim": "1" if keepdim else "0",
        }
        self.emit(out, "reduce", attrs, [self.ref(source)], node)
        self.pointwise_ops += 1
        return True

    def sym_operand(self, arg) -> str:
        if isinstance(arg, Node):
            return self.ref(arg)
        if isinstance(arg, bool) or not isinstance(arg, int):
            raise LoweringError(f"size arithmetic on {arg!r}")
        name = self.new_value()
        self.emit(f"{name}: int", "sym", {"fn": '"const"', "value": str(arg)}, [])
        return name

    def lower_sym(self, node: Node, val) -> None:
        target = node.target
        if target is torch.ops.aten.sym_size.int:
            source, dim = node.args
            rank = source.meta["val"].dim()
            out = self.define(val)
            self.value_of[node] = out.split(":")[0]
            attrs = {"fn": '"size"', "dim": str(dim % rank if rank else 0)}
            self.emit(out, "sym", attrs, [self.ref(source)], node)
            return
        fn = _SYM_FUNCTIONS[target]
        operands = [self.sym_operand(a) for a in node.args]
        if not isinstance(val, (int, torch.SymInt)):
            raise LoweringError(f"{node.name}: non-integer size arithmetic")
        out = self.define(val)
        self.value_of[node] = out.split(":")[0]
        self.emit(out, "sym", {"fn": _quote(fn)}, operands, node)

    def lower_extern(self, node: Node, val) -> None:
        schema = node.target._schema
        args = self.full_arguments(node)
        refs: list[str] = []
        arg_text = "[" + ", ".join(self.attr(a, refs) for a in args) + "]"
        results = list(val) if isinstance(val, (tuple, list)) else [val]
        if not results:
            results = [None]
        defs = [self.define(v) for v in results]
        names = [d.split(":")[0] for d in defs]
        if isinstance(val, (tuple, list)):
            self.value_of[node] = tuple(names)
        else:
            self.value_of[node] = names[0]
        impure = schema.is_mutable or torch.Tag.nondeterministic_seeded in node.target.tags
        attrs = {
            "target": _quote(schema.name),
            "overload": _quote(schema.overload_name or "default"),
            "args": arg_text,
        }
        if impure:
            attrs["impure"] = "1"
        # _unsafe_view aliases its input without saying so in its schema.
        if (
            any(r.alias_info is not None for r in schema.returns)
            or schema.name == "aten::_unsafe_view"
        ):
            attrs["view"] = "1"
        self.emit(", ".join(defs) if defs else "", "extern", attrs, refs, node)
        self.extern_ops += 1

    def lower(self) -> str:
        header = []
        constant_header = []
        output_node = None
        for node in self.gm.graph.nodes:
            val = node.meta.get("val")
            if node.op == "placeholder":
                if val is None and "example_value" in node.meta:
                    val = node.meta["example_value"]
                d = self.define(val)
                self.value_of[node] = d.split(":")[0]
                header.append(d)
            elif node.op == "call_function":
                target = node.target
                if target is operator.getitem:
                    source, index = node.args
                    names = self.value_of.get(source)
                    if not isinstance(names, tuple):
                        raise LoweringError(f"{node.name}: getitem of a single value")
                    self.value_of[node] = names[index]
                elif target is torch.ops.aten.sym_size.int or target in _SYM_FUNCTIONS:
                    self.lower_sym(node, val)
                elif isinstance(target, torch._ops.OpOverload):
                    if not (
                        self.try_pointwise(node, val)
                        or self.try_cast(node, val)
                        or self.try_reduce(node, val)
                    ):
                        self.lower_extern(node, val)
                else:
                    raise LoweringError(f"{node.name}: call of {target} is not an ATen operator")
            elif node.op == "get_attr":
                constant = self.gm
                for part in node.target.split("."):
                    constant = getattr(constant, part)
                if not isinstance(constant, torch.Tensor):
                    raise LoweringError(f"{node.name}: constant of type {type(constant).__name__}")
                self.constants.append(constant)
                d = self.define(constant)
                self.value_of[node] = d.split(":")[0]
                constant_header.append(d)
            elif node.op == "output":
                output_node = node
            else:
                raise LoweringError(f"{node.name}: {node.op} nodes are not supported")
        outputs = []
        for arg in output_node.args[0]:
            if arg is None:
                outputs.append("_")
            elif isinstance(arg, Node):
                outputs.append(self.ref(arg))
            else:
                outputs.append(self.sym_operand(arg))
        body = "\n".join(self.lines)
        return (
            "graph("
            + ", ".join(header + constant_header)
            + ") {\n"
            + (body + "\n" if body else "")
            + "  return ("
            + ", ".join(outputs)
            + ")\n}\n"
        )


def _fma_targets() -> tuple:
    prims = getattr(torch.ops, "prims", None)
    fma = getattr(prims, "fma", None) if prims is not None else None
    return (fma.default,) if fma is not None else ()


def _expand_fma(gm: GraphModule) -> None:
    """Dynamo writes ``t.addcdiv_(a, b, value=v)``, ``t.addcmul_(a, b, value=v)`` and
    ``t.add_(x, alpha=tensor)`` as Inductor's ``prims.fma(p, v, t)``, whose eager kernel is
    ``p * v + t`` (two roundings) and whose ``v`` may be a Python number, which a boxed call
    cannot pass for its Tensor argument. Each becomes that ``mul`` and ``add`` (``mul.Scalar`` for
    a number), so compiled results equal eager ones and the pair fuses."""
    targets = _fma_targets()
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in targets or node.kwargs:
            continue
        a, b, c = node.args
        mul = torch.ops.aten.mul.Tensor if isinstance(b, Node) else torch.ops.aten.mul.Scalar
        with gm.graph.inserting_before(node):
            product = gm.graph.call_function(mul, (a, b))
            total = gm.graph.call_function(torch.ops.aten.add.Tensor, (product, c))
        a_val = a.meta.get("val")
        b_val = b.meta.get("val") if isinstance(b, Node) else b
        if isinstance(a_val, torch.Tensor):
            product.meta["val"] = mul(a_val, b_val)
        total.meta["val"] = node.meta.get("val")
        for key in ("stack_trace", "source_fn_stack", "nn_module_stack"):
            if key in node.meta:
                product.meta[key] = total.meta[key] = node.meta[key]
        node.replace_all_uses_with(total)
        gm.graph.erase_node(node)
        changed = True
    if changed:
        gm.recompile()


def lower_graph(gm: GraphModule, reductions: bool = True) -> tuple[str, dict, list[torch.Tensor]]:
    """Returns the IR text of ``gm``, counts of its pointwise and extern nodes, and the tensor
    constants (``get_attr``) the program takes after the graph's own inputs. With
    ``reductions=False`` sum/mean/amax stay ATen calls."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    _expand_fma(gm)
    lowerer = _Lowerer(gm, reductions)
    with unset_fake_temporarily():  # stand-in tensors for planning must be real (and empty)
        text = lowerer.lower()
    counts = {"pointwise": lowerer.pointwise_ops, "extern": lowerer.extern_ops}
    return text, counts, lowerer.constants
