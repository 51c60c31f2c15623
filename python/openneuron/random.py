"""Device random-number generators: one default Philox generator per device."""

from typing import Any

import torch

from openneuron import _C
from openneuron.device_selection import device_index as _index


class _DefaultGenerators:
    """Lazy tuple-like view of the per-device default generators."""

    def __getitem__(self, index: int) -> torch.Generator:
        return _C._default_generator(index)

    def __len__(self) -> int:
        return _C._configured_device_count()

    def __iter__(self):
        return (self[i] for i in range(len(self)))


default_generators = _DefaultGenerators()


def _generator(device: Any) -> torch.Generator:
    return _C._default_generator(_index(device))


def manual_seed(seed: int) -> None:
    """Seeds the current device's default generator."""
    _generator(None).manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for generator in default_generators:
        generator.manual_seed(int(seed))


def seed() -> None:
    """Seeds the current device's generator with a nondeterministic value."""
    _generator(None).seed()


def seed_all() -> None:
    value = _generator(None).seed()
    for generator in default_generators:
        generator.manual_seed(value)


def initial_seed() -> int:
    return _generator(None).initial_seed()


def get_rng_state(device: Any = "neuron") -> torch.Tensor:
    """The generator state of ``device`` as a CPU uint8 tensor."""
    return _generator(device).get_state()


def set_rng_state(new_state: torch.Tensor, device: Any = "neuron") -> None:
    _generator(device).set_state(new_state.clone())


def get_rng_state_all() -> list[torch.Tensor]:
    return [generator.get_state() for generator in default_generators]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    for index, state in enumerate(new_states):
        set_rng_state(state, index)
