"""pytest plug-in: the NKI Library's own test suite, unchanged, in its simulation mode on
OpenNeuron's simulated NeuronCore instead of AWS's CPU simulator.

Loaded by ``bench.nki.library_tests`` (``pytest -p bench.nki.nki_library_plugin`` from the
checkout's root, ``--test-mode simulation``). Nothing of the library is copied or changed; the
plug-in only answers names the suite imports and AWS does not ship to this machine:

- ``nki_cpu_simulator`` (the simulator package the suite's simulation mode loads): its ``nki``
  modules are openneuron's, and ``nki.cpu_simulate(kernel)[lnc](**inputs)`` runs the kernel on
  the simulator, recording the estimated latency for the report;
- ``neuron_dtypes`` (host-side casts; see ``neuron_dtypes_host``);
- ``test.utils.perf_analysis_private`` and ``test.utils.scripts.remote_lock_scripts``, which
  the public checkout imports but does not hold (hardware trace analysis and remote-host
  locking; neither is reached in simulation mode, and calling the analysis raises).

One defect of the public harness is bridged at run time (no file changed): its simulation path
reads ``Orchestrator._compiled_kernel``, which only compilation sets, so every simulated test
would fail after its kernel ran; the plug-in gives the class the value ``None`` ("nothing
compiled"), which the harness already handles.

Per test it records outcome, reason, our estimated latency and any cycle figure the test's
parameters carry (``tpbSgCyclesSum``, ``cyclesQoR``), appended as JSON lines to
``--openneuron-report`` as each test ends (a "started" line before each test, so a crash of
the process still names the test). ``--openneuron-timeout`` stops a test after that many
seconds; ``--openneuron-sample N`` keeps the first N cases of each test function.
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import signal
import sys
import types
from pathlib import Path

import pytest

import openneuron  # noqa: F401  (installs the `nki` alias before the suite imports it)
import openneuron.nki as on_nki
from bench.nki import neuron_dtypes_host
from openneuron.nki import alias
from openneuron.nki import kernel as on_kernel

# Cycle figures the library's tests carry as parameters (hardware measurements).
CYCLE_PARAMETERS = ("tpbSgCyclesSum", "cyclesQoR")
# nki.isa.nc_version generation -> simulator profile.
PROFILE_OF_GENERATION = {"gen3": "trn2", "gen4": "trn3"}

_current = {"latency_ns": None, "profile": None}
_report = {"path": None}


def _record(row):
    """Appends one row to the report (JSON lines, written at once so a crash keeps them)."""
    if _report["path"] is not None:
        with open(_report["path"], "a") as handle:
            handle.write(json.dumps(row) + "\n")


def _profile():
    generation = str(os.environ.get("NKI_NC_VERSION", "gen3")).rsplit(".", 1)[-1]
    return PROFILE_OF_GENERATION.get(generation, "trn2")


class _SimulatedLaunch:
    """``nki.cpu_simulate(kernel)[lnc](**inputs)``: runs on the simulator, returns the
    kernel's outputs (NumPy arrays) and records the estimated latency of the test."""

    def __init__(self, kernel, grid=1):
        self.kernel = kernel if isinstance(kernel, on_kernel.Kernel) else on_kernel.Kernel(kernel)
        self.grid = grid

    def __getitem__(self, grid):
        return _SimulatedLaunch(self.kernel, grid)

    def __call__(self, *args, **kwargs):
        profile = _profile()
        trace_dir = os.environ.get("NKI_LIBRARY_TRACE_DIR")  # a Perfetto trace per launch
        result = on_kernel.launch(
            self.kernel[self.grid], args, kwargs, profile=profile, trace=trace_dir is not None
        )
        if trace_dir:
            name = f"{self.kernel.func.__name__}-{len(os.listdir(trace_dir))}.json"
            result.save_trace(os.path.join(trace_dir, name))
        _current["latency_ns"] = result.latency_ns
        _current["profile"] = profile
        return result.outputs


def cpu_simulate(kernel):
    return _SimulatedLaunch(kernel)


def _simulator_modules():
    """The module objects the suite expects under ``nki_cpu_simulator``."""
    package = types.ModuleType("nki_cpu_simulator")
    package.__path__ = []
    facade = types.ModuleType("nki_cpu_simulator.nki", on_nki.__doc__)
    facade.__path__ = []
    facade.__getattr__ = lambda name: getattr(on_nki, name)
    facade.cpu_simulate = cpu_simulate
    package.nki = facade
    builtin = types.ModuleType(
        "nki_cpu_simulator.nki.builtin",
        "Set as `builtins.builtin` by the suite; no kernel uses it.",
    )
    modules = {"nki_cpu_simulator": package, "nki_cpu_simulator.nki": facade}
    modules["nki_cpu_simulator.nki.builtin"] = builtin
    for name in ("compiler", "isa", "isa.constants", "language", "language.dtypes", "tensor"):
        modules[f"nki_cpu_simulator.nki.{name}"] = None  # imported lazily from `nki.<name>`
    modules["nki_cpu_simulator.nki.typing"] = None
    return modules


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers the names above (and nothing else)."""

    def __init__(self):
        self.modules = _simulator_modules()
        self.modules["neuron_dtypes"] = neuron_dtypes_host
        stand_in = types.ModuleType(
            "test.utils.perf_analysis_private", "Hardware trace analysis; not public."
        )

        def analyze_trace(**_):
            raise RuntimeError("perf_analysis_private is not part of the public NKI Library")

        stand_in.analyze_trace = analyze_trace
        self.modules["test.utils.perf_analysis_private"] = stand_in
        # Remote-host core locking (hardware runs only): the checkout imports these names.
        scripts = types.ModuleType("test.utils.scripts", "Remote host scripts; not public.")
        scripts.__path__ = []
        locks = types.ModuleType("test.utils.scripts.remote_lock_scripts", "Not public.")
        locks.LockResult = type("LockResult", (), {"__doc__": "Remote locking: not public."})
        locks.LockStatus = type("LockStatus", (), {"__doc__": "Remote locking: not public."})
        self.modules["test.utils.scripts"] = scripts
        self.modules["test.utils.scripts.remote_lock_scripts"] = locks

    def find_spec(self, fullname, path=None, target=None):
        facade = self.modules["nki_cpu_simulator.nki"]
        if fullname.startswith("nki.") and sys.modules.get("nki") is facade:
            # `nki` is the facade once the suite set simulation up: its submodules are the
            # ones the alias table names.
            name = alias.target_of(fullname)
            if name is not None and importlib.util.find_spec(name) is not None:
                self.modules[fullname] = importlib.import_module(name)
        if fullname not in self.modules:
            return None
        if fullname == "neuron_dtypes" and importlib.machinery.PathFinder.find_spec(fullname):
            return None  # AWS's package is installed: it answers
        if fullname.startswith("test.") and importlib.machinery.PathFinder.find_spec(
            fullname.rpartition(".")[2], path
        ):
            return None  # the checkout holds it after all
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        module = self.modules[spec.name]
        if module is None:  # nki_cpu_simulator.nki.X is the `nki.X` openneuron answers
            module = importlib.import_module(spec.name.removeprefix("nki_cpu_simulator."))
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())


def pytest_addoption(parser):
    group = parser.getgroup("openneuron")
    group.addoption("--openneuron-report", default=None, help="JSON file of per-test results")
    group.addoption("--openneuron-timeout", type=float, default=0, help="seconds per test")
    group.addoption(
        "--openneuron-sample",
        type=int,
        default=0,
        help="run only the first N parameter sets of each test function (0: all)",
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """With --openneuron-sample N, keeps the first N collected cases of each test function
        (in the suite's own order) and deselects the rest. Tests marked trace_only or compile_only
    (AWS's compiler front end, no kernel run) are skipped as not applicable."""
    not_applicable = pytest.mark.skip(
        reason="not applicable: a trace-only or compile-only test runs AWS's compiler front end"
    )
    for item in items:
        if item.get_closest_marker("trace_only") or item.get_closest_marker("compile_only"):
            item.add_marker(not_applicable)
    sample = config.getoption("--openneuron-sample")
    if not sample:
        return
    kept, dropped, seen = [], [], {}
    for item in items:
        function = item.nodeid.split("[", 1)[0]
        seen[function] = seen.get(function, 0) + 1
        (kept if seen[function] <= sample else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_collectreport(report):
    if report.failed:  # a test file that does not import: every test in it is unrun
        crash = getattr(report.longrepr, "reprcrash", None)
        text = crash.message if crash is not None else str(report.longrepr).splitlines()[-1]
        _record({"test": report.nodeid, "outcome": "collection-error", "reason": text})


def pytest_sessionstart(session):
    _report["path"] = session.config.getoption("--openneuron-report")
    orchestrator = sys.modules.get("test.utils.test_orchestrator")
    if orchestrator is not None and not hasattr(orchestrator.Orchestrator, "_compiled_kernel"):
        orchestrator.Orchestrator._compiled_kernel = None  # see the module docstring


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """The library's kernels (`nkilib_src.nkilib`) importable before its conftest loads."""
    for root in (Path(str(early_config.rootpath)), Path(os.getcwd())):
        source = root / "src"
        if (source / "nkilib_src").is_dir() and str(source) not in sys.path:
            sys.path.insert(0, str(source))


class _TestTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _TestTimeout("over the per-test time limit (--openneuron-timeout)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    limit = item.config.getoption("--openneuron-timeout")
    _current["latency_ns"] = None
    if limit:
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        if limit:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _reason(report):
    if report.passed:
        return ""
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return text


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" or (report.when == "setup" and not report.passed):
        params = getattr(getattr(item, "callspec", None), "params", {})
        cycles = {k: params[k] for k in CYCLE_PARAMETERS if k in params}
        _record(
            {
                "test": item.nodeid,
                "outcome": report.outcome,
                "reason": _reason(report),
                "seconds": round(report.duration, 2),
                "latency_ns": _current["latency_ns"] if report.when == "call" else None,
                "profile": _current["profile"],
                "published_cycles": {k: v for k, v in cycles.items() if v is not None},
            }
        )


def pytest_runtest_logstart(nodeid, location):
    _record({"test": nodeid, "outcome": "started"})  # the last one names a test that crashed
