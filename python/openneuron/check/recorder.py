"""Watches one run of a workload on one device: every module's output and parameter gradient
in the first step, the loss of every step, step times, host-fallback call sites, float64 use,
and a torch.profiler trace of one step. The same recorder serves the script runner (where it
also redirects the script's accelerator device to the device under test) and the Python API."""

import os
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

SAMPLE_ELEMENTS = 4096  # elements of each output/gradient kept for the comparison
_RANDOM_FACTORIES = {torch.randn, torch.rand, torch.randint, torch.randperm, torch.normal}
_RANDOM_LIKE = {torch.randn_like, torch.rand_like, torch.randint_like}
_DROPOUTS = {
    torch.nn.functional.dropout,
    torch.dropout,
    torch.nn.functional.dropout1d,
    torch.nn.functional.dropout2d,
    torch.nn.functional.dropout3d,
    torch.nn.functional.alpha_dropout,
    torch.nn.functional.feature_alpha_dropout,
}


def sample_of(value: Any) -> torch.Tensor | None:
    """The first floating-point tensor in a module's output, flattened to at most
    SAMPLE_ELEMENTS float32 values on the host."""
    if isinstance(value, torch.Tensor):
        if not value.is_floating_point():
            return None
        flat = value.detach().reshape(-1)[:SAMPLE_ELEMENTS]
        return flat.to("cpu", torch.float32)
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            found = sample_of(item)
            if found is not None:
                return found
    return None


def _dtype_of(value: Any) -> torch.dtype:
    if isinstance(value, torch.Tensor):
        return value.dtype
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, torch.Tensor) and item.is_floating_point():
                return item.dtype
    return torch.float32


def user_frame(user_files: set[str]) -> str | None:
    """ "file:line" of the innermost frame of the user's own code on the current stack."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if os.path.abspath(frame.filename) in user_files:
            return f"{os.path.basename(frame.filename)}:{frame.lineno}"
    return None


class Recorder:
    """Install with ``with Recorder(...) as rec:``; results are in ``rec.result``.

    ``redirect`` maps the devices the code asks for ("cuda", "neuron") to ``device`` (the
    script runner's way of running one script on both devices) and makes random tensors on the
    host first, so both runs draw the same numbers; dropout is off in both runs so outputs are
    comparable."""

    def __init__(
        self, device: str, user_files: set[str], redirect: bool = False, profile: bool = True
    ) -> None:
        self.device = device
        self.user_files = {os.path.abspath(f) for f in user_files}
        self.redirect = redirect
        self.profile = profile and device != "cpu"
        self.result: dict[str, Any] = {
            "device": device,
            "modules": [],
            "grads": {},
            "losses": [],
            "step_ends": [],
            "fallback_lines": {},
            "float64_lines": [],
            "notes": [],
        }
        self._names: dict[int, str] = {}
        self._modules: dict[str, torch.nn.Module] = {}
        self._calls: dict[str, int] = {}
        self._backwards = 0
        self._handles: list[Any] = []
        self._mode: _CheckMode | None = None
        self._profiler: torch.profiler.profile | None = None
        self._warning_filter: Any | None = None
        self.kept_profile: torch.profiler.profile | None = None

    # -- naming and module hooks ---------------------------------------------------------
    def _pre_hook(self, module: torch.nn.Module, args: Any) -> None:
        if id(module) in self._names or self._backwards > 0:
            return
        root = type(module).__name__
        for name, sub in module.named_modules():
            if id(sub) not in self._names:
                qualified = f"{root}.{name}" if name else root
                self._names[id(sub)] = qualified
                self._modules[qualified] = sub

    def _forward_hook(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if self._backwards > 0:
            return  # the comparison uses the first step; later steps run unobserved
        name = self._names.get(id(module), type(module).__name__)
        index = self._calls.get(name, 0)
        self._calls[name] = index + 1
        sample = sample_of(output)
        if sample is not None:
            self.result["modules"].append(
                {
                    "key": f"{name}#{index}",
                    "name": name,
                    "type": type(module).__name__,
                    "sample": sample,
                    "dtype": _dtype_of(output),
                }
            )

    # -- steps ----------------------------------------------------------------------------
    def on_loss(self, loss: torch.Tensor) -> None:
        if loss.numel() == 1:
            self.result["losses"].append(float(loss.detach().float().cpu()))
            self.result["step_ends"].append(time.perf_counter())

    def after_backward(self) -> None:
        if self._backwards == 0:
            for name, module in self._modules.items():
                grads = [
                    p.grad.detach().reshape(-1)
                    for p in module.parameters(recurse=False)
                    if p.grad is not None and p.grad.is_floating_point()
                ]
                if grads:
                    flat = torch.cat([g[:SAMPLE_ELEMENTS] for g in grads])[:SAMPLE_ELEMENTS]
                    self.result["grads"][name] = flat.to("cpu", torch.float32)
        self._backwards += 1
        if self._profiler is not None and self._backwards in (1, 2):
            self._stop_profiler(keep=self._backwards == 2)
            if self._backwards == 1:
                self._start_profiler()

    def _start_profiler(self) -> None:
        if not self.profile:
            return
        from torch.profiler import ProfilerActivity, profile

        self._profiler = profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], record_shapes=True
        )
        self._profiler.__enter__()

    def _stop_profiler(self, keep: bool) -> None:
        if self._profiler is None:
            return
        profiler, self._profiler = self._profiler, None
        torch.neuron.synchronize()
        profiler.__exit__(None, None, None)
        if keep:
            self.kept_profile = profiler

    # -- fallback call sites ----------------------------------------------------------------
    def _on_warning(
        self,
        message: Any,
        category: Any,
        filename: str,
        lineno: int,
        file: Any = None,
        line: Any = None,
    ) -> None:
        text = str(message)
        if text.startswith("neuron: ") and " has no native kernel" in text:
            op = text[len("neuron: ") : text.index(" has no native kernel")]
            where = user_frame(self.user_files) or f"{os.path.basename(filename)}:{lineno}"
            self.result["fallback_lines"].setdefault(op, []).append(where)
        elif self._warning_filter is not None:
            self._warning_filter(message, category, filename, lineno, file, line)

    # -- install ------------------------------------------------------------------------
    def __enter__(self) -> "Recorder":
        hooks = torch.nn.modules.module
        self._handles = [
            hooks.register_module_forward_pre_hook(self._pre_hook),
            hooks.register_module_forward_hook(self._forward_hook),
        ]
        self._mode = _CheckMode(self)
        self._mode.__enter__()
        self._warning_filter = warnings.showwarning
        warnings.showwarning = self._on_warning
        if self.device != "cpu":
            import openneuron

            openneuron.clear_op_tracking()
        self._start_profiler()
        self.result["start"] = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.result["end"] = time.perf_counter()
        try:
            self._stop_profiler(keep=True)
        except Exception as error:  # a device error surfaces here; the run's own error wins
            self.result["notes"].append(f"profiler stop failed: {error}")
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
        for handle in self._handles:
            handle.remove()
        if self._warning_filter is not None:
            warnings.showwarning = self._warning_filter
        if self.device != "cpu":
            import openneuron

            self.result["executed_ops"] = openneuron.get_executed_ops()
            self.result["fallback_ops"] = openneuron.get_fallback_ops()


class _CheckMode(TorchFunctionMode):
    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder
        self.target = torch.device(recorder.device)
        self.float64_seen = False

    def _map(self, value: Any) -> Any:
        if isinstance(value, (str, torch.device)):
            try:
                device = torch.device(value)
            except (RuntimeError, TypeError):
                return value
            if device.type in ("cuda", "neuron") and device.type != self.target.type:
                return self.target
        return value

    def __torch_function__(self, func: Callable, types: Any, args: Any = (), kwargs: Any = None):
        kwargs = dict(kwargs or {})
        rec = self.recorder
        if func in _DROPOUTS:
            return args[0] if args else kwargs["input"]
        if func is torch.Tensor.backward:
            rec.on_loss(args[0])
            result = func(*args, **kwargs)
            rec.after_backward()
            return result
        if rec.redirect:
            if "device" in kwargs:
                kwargs["device"] = self._map(kwargs["device"])
            if func is torch.Tensor.cuda:
                return args[0].to(self.target)
            if func is torch.Tensor.to and len(args) > 1:
                args = (args[0], self._map(args[1]), *args[2:])
            if self.target.type != "cpu":
                if func in _RANDOM_FACTORIES and kwargs.get("device") == self.target:
                    kwargs["device"] = "cpu"
                    return func(*args, **kwargs).to(self.target)
                if func in _RANDOM_LIKE and args and isinstance(args[0], torch.Tensor):
                    if args[0].device.type == self.target.type and "device" not in kwargs:
                        return func(args[0].cpu(), *args[1:], **kwargs).to(self.target)
        result = func(*args, **kwargs)
        if (
            not self.float64_seen
            and isinstance(result, torch.Tensor)
            and result.dtype == torch.float64
        ):
            self.float64_seen = True
            rec.result["float64_lines"].append(user_frame(rec.user_files) or "?")
        return result
