"""Deliberately wrong kernels, put in through the dispatcher, prove that a test can fail."""

import contextlib
import warnings

import torch


@contextlib.contextmanager
def kernel_replaced(op_name: str, kernel):
    """kernel replaces aten::op_name on neuron inside the block, the real kernel after it."""
    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
        library.impl(op_name, kernel, "PrivateUse1")
    try:
        yield
    finally:
        library._destroy()
