"""The device-type test base for `neuron`, a pytest plugin (`-p tests.upstream.neuron_test_base`).

PyTorch's `common_device_type` builds its list of device test bases when it is first imported:
it adds its generic `PrivateUse1TestBase` only if a PrivateUse1 backend is registered by then.
Loaded as a plugin, this module registers the backend first, then puts `NeuronTestBase` in that
list in place of the generic base, so `instantiate_device_type_tests` makes `...NEURON` classes
whose tests run on `neuron:0`; `PYTORCH_TESTING_DEVICE_ONLY_FOR=neuron` then selects them.
"""

from __future__ import annotations

import importlib
import os
import re
import time
import zlib

import torch

import openneuron  # noqa: F401  (registers the neuron device before the framework looks)

# Imported only now, so that its list of test bases sees the registered device.
_framework = importlib.import_module("torch.testing._internal.common_device_type")


def _names_older_test_files_import() -> None:
    """Names that test files older than the installed torch import and that it no longer
    has, each defined as what it meant, so those files load on both devices alike:
    - `common_utils.skipIfMps` (nn/test_pooling.py): renamed `skipIfMPS`; both skip only on MPS.
    - `common_methods_invocations.binary_ufuncs_and_refs` (test_binary_ufuncs.py): the binary
      ufunc OpInfos and their Python references, which is what `binary_ufuncs` now holds.
    - `common_nn.new_module_tests` (test_nn.py): that list of module test specs moved into
      `common_modules.module_db`; empty here, so test_nn.py builds no tests from it (module_db is
      covered by the conformance sweep).
    - `common_cuda.tf32_is_not_fp32` (test_nn.py): whether the CUDA GPU computes float32 matmuls
      in TF32 (compute capability 8 or newer), always False without CUDA.
    - `torch._C.has_mkldnn` (test_autograd.py): whether the build has oneDNN, now
      `torch.backends.mkldnn.is_available()`.
    - `common_methods_invocations.xfail`, `skip`, `skipOps` (test_ops.py): the 2.1 forms, which
      moved to common_device_type with another signature (`_opinfo_skip_specs`).
    - `common_mkldnn.bf32_on_and_off(precision)` (test_torch.py, test_nn.py of 2.4): runs a cpu
      float32 test once as is and once more with oneDNN's bf16 float32 math at that tolerance;
      now `reduced_f32_on_and_off`, which adds a TF32 pass where the CPU has AMX-FP16."""
    common_utils = importlib.import_module("torch.testing._internal.common_utils")
    if not hasattr(common_utils, "skipIfMps"):
        common_utils.skipIfMps = common_utils.skipIfMPS
    methods = importlib.import_module("torch.testing._internal.common_methods_invocations")
    if not hasattr(methods, "binary_ufuncs_and_refs"):
        methods.binary_ufuncs_and_refs = tuple(methods.binary_ufuncs)
    common_nn = importlib.import_module("torch.testing._internal.common_nn")
    if not hasattr(common_nn, "new_module_tests"):
        common_nn.new_module_tests = []
    common_cuda = importlib.import_module("torch.testing._internal.common_cuda")
    if not hasattr(common_cuda, "tf32_is_not_fp32"):
        common_cuda.tf32_is_not_fp32 = lambda: (
            torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8
        )
    if not hasattr(torch._C, "has_mkldnn"):
        torch._C.has_mkldnn = torch.backends.mkldnn.is_available()
    if not hasattr(methods, "skipOps"):
        methods.xfail, methods.skip, methods.skipOps = _opinfo_skip_specs()
    mkldnn = importlib.import_module("torch.testing._internal.common_mkldnn")
    if not hasattr(mkldnn, "bf32_on_and_off"):
        mkldnn.bf32_on_and_off = lambda bf32_precision=1e-2: mkldnn.reduced_f32_on_and_off(
            bf32_precision=bf32_precision
        )


def _opinfo_skip_specs():
    """`xfail`, `skip` and `skipOps` as test_ops.py of 2.1 imports them from
    common_methods_invocations: `xfail(op, variant)` / `skip(op, variant)` name an OpInfo, and
    `skipOps(class, test, specs)` marks that test of each named OpInfo as an expected failure or a
    skip (by adding a DecorateInfo to the OpInfo), returning the test unchanged."""
    import unittest

    methods = importlib.import_module("torch.testing._internal.common_methods_invocations")
    decorate_info = importlib.import_module("torch.testing._internal.opinfo.core").DecorateInfo

    def xfail(op_name, variant_name="", *, device_type=None, dtypes=None):
        return (op_name, variant_name, device_type, dtypes, True)

    def skip(op_name, variant_name="", *, device_type=None, dtypes=None):
        return (op_name, variant_name, device_type, dtypes, False)

    def skip_ops(test_case_name, base_test_name, to_skip):
        for op_name, variant_name, device_type, dtypes, expected_failure in to_skip:
            mark = unittest.expectedFailure if expected_failure else unittest.skip("Skipped!")
            for op in methods.op_db:
                if op.name == op_name and op.variant_test_name == variant_name:
                    op.decorators = (
                        *op.decorators,
                        decorate_info(
                            mark, test_case_name, base_test_name,
                            device_type=device_type, dtypes=dtypes,
                        ),
                    )  # fmt: skip
        return lambda test: test

    return xfail, skip, skip_ops


class _HiddenGenericTest:
    """Stands in a device class for a generic test it inherits, so that `hasattr` does not see
    it (getting it raises AttributeError); an instantiated test of that name replaces it."""

    def __get__(self, instance, owner):
        raise AttributeError("generic test not instantiated under this name")


def _generic_tests_hidden_while_instantiating() -> None:
    """Since torch 2.x a device class (e.g. TestNNDeviceTypeCPU) inherits the generic class's
    raw tests while they are instantiated, and a test whose instantiated name equals another
    raw test's name is refused as a redefinition. A 2.1 device class did not inherit them:
    test_nn.py's `test_activations_bfloat16` (onlyCUDA) instantiated for cpu is named like its
    raw `test_activations_bfloat16_cpu` (onlyCPU, instantiated as `..._cpu_cpu`), which made the
    whole file fail to load on cpu. Here the raw tests are hidden from the device class while it
    is instantiated, as in 2.1 (placeholders, removed again after each test's instantiation);
    nothing else changes (both devices alike)."""
    base = _framework.DeviceTypeTestBase
    if getattr(base.instantiate_test, "_hides_generic_tests", False):
        return
    instantiate_test = base.instantiate_test.__func__

    def hiding_instantiate_test(cls, name, test, *, generic_cls=None):
        if generic_cls is None:
            return instantiate_test(cls, name, test, generic_cls=generic_cls)
        hidden = [m for m in generic_cls.__dict__ if m.startswith("test") and m not in cls.__dict__]
        for member in hidden:
            setattr(cls, member, _HiddenGenericTest())
        try:
            return instantiate_test(cls, name, test, generic_cls=generic_cls)
        finally:  # placeholders not replaced by an instantiated test go again
            for member in hidden:
                if isinstance(cls.__dict__.get(member), _HiddenGenericTest):
                    delattr(cls, member)

    hiding_instantiate_test._hides_generic_tests = True
    base.instantiate_test = classmethod(hiding_instantiate_test)


class NeuronTestBase(_framework.PrivateUse1TestBase):
    """Device-generic tests on the neuron device: primary device neuron:0, `torch.neuron` as
    the device module; every other rule (dtypes, skips, precision) is PyTorch's own for a
    PrivateUse1 device."""

    device_type = "neuron"
    device_mod = torch.neuron
    primary_device = "neuron:0"

    @classmethod
    def setUpClass(cls):
        if not torch.neuron.is_available():
            raise RuntimeError("the neuron device is not available")
        cls.device_mod = torch.neuron
        cls.primary_device = f"neuron:{torch.neuron.current_device()}"

    @classmethod
    def get_primary_device(cls):
        return cls.primary_device


def install() -> None:
    """Puts NeuronTestBase in the framework's list of test bases (idempotent)."""
    bases = _framework.device_type_test_bases
    bases[:] = [b for b in bases if b not in (_framework.PrivateUse1TestBase, NeuronTestBase)]
    bases.append(NeuronTestBase)


_names_older_test_files_import()
_generic_tests_hidden_while_instantiating()
install()


_session_clock: dict = {}


def pytest_sessionstart(session):
    """Starts the file's time budget (NEURON_UPSTREAM_BUDGET_SECONDS, set by the runner)."""
    budget = os.environ.get("NEURON_UPSTREAM_BUDGET_SECONDS")
    if budget:
        _session_clock.update(session=session, ends=time.monotonic() + float(budget))


def pytest_runtest_logfinish(nodeid, location):
    """Once the budget is spent, ends the session after this test, so that the JUnit XML is
    written with the tests that ran (a timeout would lose them all)."""
    if _session_clock and time.monotonic() > _session_clock["ends"]:
        _session_clock["session"].shouldstop = "time budget of this file spent"


def pytest_collection_modifyitems(config, items):
    """With NEURON_UPSTREAM_SAMPLE=N (set by the runner), keeps one test in N, chosen by a hash
    of its device-free name, so that the neuron and cpu runs keep the same tests."""
    every = int(os.environ.get("NEURON_UPSTREAM_SAMPLE", "1"))
    if every <= 1:
        return
    device = os.environ.get("PYTORCH_TESTING_DEVICE_ONLY_FOR", "")
    kept, dropped = [], []
    for item in items:
        name = re.sub(f"_{device}(?=_|$)", "", item.name) if device else item.name
        (kept if zlib.crc32(name.encode()) % every == 0 else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
