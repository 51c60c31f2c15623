"""PyTorch's OpInfo and ModuleInfo databases, by name (imported once per process)."""

from __future__ import annotations

import functools
import warnings

import torch  # noqa: F401

import openneuron  # noqa: F401  (registers the device before the databases are built)


@functools.cache
def ops_by_name() -> dict:
    """op_db by full name ("name" or "name.variant"); names are unique in torch 2.13."""
    from .harness import op_full_name

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
    return {op_full_name(op): op for op in op_db}


@functools.cache
def modules_by_name() -> dict:
    """module_db by name (e.g. "nn.Linear")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_modules import module_db
    return {info.name: info for info in module_db}
