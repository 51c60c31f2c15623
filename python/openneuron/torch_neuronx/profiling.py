"""``torch_neuronx.profiling``: TorchNeuron's profiler configuration on the simulated device.

TorchNeuron profiles through the standard ``torch.profiler.profile`` with two activities (CPU and
PrivateUse1), a ``NeuronConfig`` as ``experimental_config`` choosing what the Neuron side
collects, and ``NeuronProfiler(config).export_trace`` as ``on_trace_ready`` writing everything
into one directory per process. The same script runs here. What each mode collects:

- ``ProfileMode.RUNTIME``: the runtime's activity, every device op and copy per stream (start,
  end, launching host op, bytes): ``runtime_trace.json``, and the device rows of ``trace.json``.
- ``ProfileMode.DEVICE``: each device op with its projected trn2/trn3 time and what bounds it
  (the simulator's engine costs, else a roofline): ``device_profile.json``. AWS's hardware
  writes instruction traces (.ntff) of compiled programs instead; there are none here.
- ``ProfileMode.CPU_UTIL``: the process's and the machine's CPU utilisation, sampled every
  ``sample_period_ms`` while the profile records: ``cpu_util.json``.
- ``ProfileMode.HOST_MEMORY``: the process's resident memory and the device memory in use,
  sampled likewise: ``host_mem.json``.

``trace.json`` is torch's Chrome trace with each device event's projected time
(``openneuron.profiler.export_chrome_trace``). The settings travel as torch's
``custom_profiler_config`` string (``"modes:device,runtime;max_events_per_nc:1000;..."``), so a
plain ``_ExperimentalConfig(custom_profiler_config=...)`` works too; the bridge reads it when
the profile starts and refuses one it cannot read with a ValueError.
"""

from __future__ import annotations

import datetime
import enum
import json
import os
import socket
from collections.abc import Iterable
from typing import Any

from torch._C._profiler import _ExperimentalConfig
from torch.profiler import ProfilerActivity

from openneuron import _C
from openneuron.nki.kernel import default_profile

__all__ = ["DEFAULT_OUTPUT_DIR", "NeuronConfig", "NeuronProfiler", "ProfileMode"]

# Where NeuronProfiler writes when the config names no directory (relative to the working one).
DEFAULT_OUTPUT_DIR = "neuron_profile"


class ProfileMode(enum.Enum):
    """What the Neuron side of a profile collects (TorchNeuron's names)."""

    DEVICE = "device"
    RUNTIME = "runtime"
    CPU_UTIL = "cpu_util"
    HOST_MEMORY = "host_memory"


def _mode(value: ProfileMode | str) -> ProfileMode:
    if isinstance(value, ProfileMode):
        return value
    if isinstance(value, str):
        for mode in ProfileMode:
            if value.lower() in (mode.value, mode.name.lower()):
                return mode
    raise ValueError(
        f"NeuronConfig: unknown profile mode {value!r}; expected one of "
        + ", ".join(f"ProfileMode.{m.name}" for m in ProfileMode)
    )


def _core_list(cores: str | int | Iterable[int]) -> str:
    if isinstance(cores, str):
        return cores
    if isinstance(cores, int):
        return str(cores)
    return ",".join(str(int(core)) for core in cores)


class NeuronConfig(_ExperimentalConfig):
    """The Neuron side of a ``torch.profiler.profile``, passed as its ``experimental_config``.

    ``modes``: the ``ProfileMode`` values to collect (default DEVICE and RUNTIME; an empty list
    collects nothing on the device). ``max_events_per_nc``: at most this many device events per
    NeuronCore (the earliest). ``capture_enabled_for_nc``: the cores whose events are kept, as
    ``"0,1,2-5"`` or a list of indices (default every core). ``profile_output_dir``: where
    ``NeuronProfiler`` writes. ``neff_cache_dir`` and ``precache_node_info`` are accepted for
    scripts written for TorchNeuron; this backend compiles no NEFFs, so nothing is copied or
    precached. ``sample_period_ms``: the CPU and memory sampling period. Any other keyword goes
    to torch's ``_ExperimentalConfig``. A value that cannot be used raises ValueError here.
    """

    def __init__(
        self,
        modes: Iterable[ProfileMode | str] | None = None,
        max_events_per_nc: int | None = None,
        capture_enabled_for_nc: str | int | Iterable[int] | None = None,
        profile_output_dir: str | os.PathLike | None = None,
        neff_cache_dir: str | os.PathLike | None = None,
        precache_node_info: bool = True,
        sample_period_ms: int = 10,
        **experimental: Any,
    ) -> None:
        chosen = [ProfileMode.DEVICE, ProfileMode.RUNTIME] if modes is None else modes
        self.modes = list(dict.fromkeys(_mode(m) for m in chosen))
        self.max_events_per_nc = max_events_per_nc
        self.capture_enabled_for_nc = capture_enabled_for_nc
        self.profile_output_dir = os.fspath(profile_output_dir or DEFAULT_OUTPUT_DIR)
        self.neff_cache_dir = None if neff_cache_dir is None else os.fspath(neff_cache_dir)
        self.precache_node_info = bool(precache_node_info)
        self.sample_period_ms = sample_period_ms
        items = [
            "modes:" + ",".join(m.value for m in self.modes),
            f"profile_output_dir:{self.profile_output_dir}",
            f"precache_node_info:{str(self.precache_node_info).lower()}",
            f"sample_period_ms:{sample_period_ms}",
        ]
        if max_events_per_nc is not None:
            if int(max_events_per_nc) < 0:
                raise ValueError(
                    f"NeuronConfig: max_events_per_nc must be >= 0, got {max_events_per_nc}"
                )
            items.append(f"max_events_per_nc:{int(max_events_per_nc)}")
        if capture_enabled_for_nc is not None:
            items.append(f"capture_enabled_for_nc:{_core_list(capture_enabled_for_nc)}")
        if self.neff_cache_dir is not None:
            items.append(f"neff_cache_dir:{self.neff_cache_dir}")
        for value in (self.profile_output_dir, self.neff_cache_dir or ""):
            if ";" in value:
                raise ValueError(f"NeuronConfig: a directory name may not contain ';': {value!r}")
        self.custom_config = ";".join(items)
        self.settings = _C._parse_profile_settings(self.custom_config)  # ValueError if unusable
        super().__init__(custom_profiler_config=self.custom_config, **experimental)

    def __repr__(self) -> str:
        return f"NeuronConfig({self.custom_config!r})"


def _json_dump(path: str, payload: Any) -> None:
    with open(path, "w") as f:
        json.dump(payload, f, indent=1)


def _rank() -> int | None:
    import torch.distributed as dist

    return dist.get_rank() if dist.is_available() and dist.is_initialized() else None


class NeuronProfiler:
    """Writes a finished profile where TorchNeuron's tools expect it: pass
    ``NeuronProfiler(config).export_trace`` as ``torch.profiler.profile``'s ``on_trace_ready``.

    Each export makes ``<profile_output_dir>/<host>_pid_<pid>/<timestamp>/`` (a new one for every
    cycle of a schedule) holding ``trace.json`` and one file per mode of the config (see the
    module's docstring); ``output_dirs`` lists the directories written, oldest first.
    """

    def __init__(self, config: NeuronConfig | None = None) -> None:
        self.config = config if config is not None else NeuronConfig()
        self.output_dirs: list[str] = []

    def _new_directory(self) -> str:
        process = f"{socket.gethostname()}_pid_{os.getpid()}"
        stamp = datetime.datetime.now().strftime("%Y%m%d_%H%M%S_%f")
        directory = os.path.join(self.config.profile_output_dir, process, stamp)
        suffix = 1
        while os.path.exists(directory):
            suffix += 1
            directory = os.path.join(self.config.profile_output_dir, process, f"{stamp}_{suffix}")
        os.makedirs(directory)
        return directory

    def export_trace(self, prof: Any) -> str:
        """Writes the files of one finished profile and returns their directory."""
        import openneuron.profiler as projection

        directory = self._new_directory()
        # Without the PrivateUse1 activity the Neuron side recorded nothing: only torch's trace.
        traced_device = ProfilerActivity.PrivateUse1 in getattr(prof, "activities", ())
        modes = set(self.config.modes) if traced_device else set()
        header = {
            "rank": _rank(),
            "pid": os.getpid(),
            "profile": default_profile(),
            "modes": [m.name for m in self.config.modes],
            "config": self.config.custom_config,
        }
        projection.export_chrome_trace(prof, os.path.join(directory, "trace.json"))
        if ProfileMode.RUNTIME in modes:
            activities = sorted(_C._last_device_activities(), key=lambda a: a["start_ns"])
            _json_dump(
                os.path.join(directory, "runtime_trace.json"), {**header, "activities": activities}
            )
        if ProfileMode.DEVICE in modes:
            ops = projection.device_ops(prof)
            _json_dump(
                os.path.join(directory, "device_profile.json"),
                {
                    **header,
                    "projection": projection.METHOD,
                    "ops": ops,
                    "summary": projection.projection_summary(ops, top=len(ops) or 1),
                },
            )
        samples = _C._last_host_samples()
        if ProfileMode.CPU_UTIL in modes:
            _json_dump(
                os.path.join(directory, "cpu_util.json"),
                {
                    **header,
                    "cpu_count": os.cpu_count(),
                    "samples": [
                        {k: s[k] for k in ("time_ns", "process_cpu_percent", "system_cpu_percent")}
                        for s in samples
                    ],
                },
            )
        if ProfileMode.HOST_MEMORY in modes:
            _json_dump(
                os.path.join(directory, "host_mem.json"),
                {
                    **header,
                    "samples": [
                        {k: s[k] for k in ("time_ns", "resident_bytes", "device_allocated_bytes")}
                        for s in samples
                    ],
                },
            )
        self.output_dirs.append(directory)
        return directory
