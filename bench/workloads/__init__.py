"""The representative workloads, shared by tests, benchmarks and the demo.

Each workload builds its model on the CPU from a fixed seed (random weights, synthetic data,
nothing downloaded), then moves it to the requested device, so every device starts from the
same parameters and sees the same batches. ``build`` returns a ``Built``: the model, the
optimizer (None for inference) and ``step(i)``, which runs training step ``i`` (or forward
pass ``i``) and returns the loss (or output) as a tensor on the device.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch


@dataclasses.dataclass
class Built:
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer | None
    step: Callable[[int], torch.Tensor]
    # What step() calls to run the model: the model itself, or its torch.compile'd form.
    runner: dict = dataclasses.field(default_factory=dict)

    def compile(self, **options) -> None:
        """Makes step() run the model through ``torch.compile(model, **options)``."""
        self.runner["model"] = torch.compile(self.model, **options)


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """How closely neuron must match the CPU on this workload, and why."""

    rtol: float
    atol: float
    reason: str


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    description: str
    training: bool
    # build(device, size, seed) -> Built; size is a key of `sizes`.
    builder: Callable[..., Built]
    sizes: dict[str, dict]
    tolerance: Tolerance

    def build(self, device: str | torch.device, size: str = "small", seed: int = 0) -> Built:
        built = self.builder(torch.device(device), seed=seed, **self.sizes[size])
        built.runner.setdefault("model", built.model)
        return built


WORKLOADS: dict[str, Workload] = {}


def register(workload: Workload) -> Workload:
    WORKLOADS[workload.name] = workload
    return workload


def get_workload(name: str) -> Workload:
    return WORKLOADS[name]


def training(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    batch_of: Callable[[int], tuple],
    loss_of: Callable[..., torch.Tensor],
) -> Built:
    """A Built whose step(i) runs one optimizer step on batch i: loss_of(model, *batch)."""
    runner = {"model": model}

    def step(i: int) -> torch.Tensor:
        optimizer.zero_grad()
        loss = loss_of(runner["model"], *batch_of(i))
        loss.backward()
        optimizer.step()
        return loss.detach()

    return Built(model, optimizer, step, runner)


def classification_loss(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of a classifier's logits on inputs `x` against labels `y`."""
    return torch.nn.functional.cross_entropy(model(x), y)


def causal_lm_loss(model: torch.nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """Next-token loss of a Hugging Face causal language model on `tokens`."""
    return model(input_ids=tokens, labels=tokens).loss


def cycling_batches(batches: list, device: torch.device) -> Callable[[int], tuple]:
    """Moves the pre-drawn CPU batches to `device` once; batch(i) cycles through them."""
    on_device = [tuple(t.to(device) for t in batch) for batch in batches]
    return lambda i: on_device[i % len(on_device)]


# Importing the modules registers the workloads in a fixed order.
from bench.workloads import bert, cnn, gpt2, llama, mlp, moe  # noqa: E402,F401
