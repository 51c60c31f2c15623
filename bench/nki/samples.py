"""AWS's nki-samples kernels, unchanged, on the simulated NeuronCore: how many run and agree
with their reference, per snapshot, with the reason for every failure.

    .venv/bin/python -m bench.nki.samples SNAPSHOT [SNAPSHOT ...] [--json PATH] [--only WORD]

SNAPSHOT is the root of an nki-samples checkout (any commit). Two kinds of kernel are counted:

- tutorial kernels (``src/nki_samples/tutorials``): each file is imported from the snapshot as
  it is and its kernel called on inputs shaped as the tutorial's own driver shapes them; the
  result is compared with the driver's reference (the file's own reference function where it
  has one, otherwise the driver's formula, written here) at the driver's tolerance;
- reference kernels (``src/nki_samples/reference``): the snapshot's own unit tests
  (``test/unit``) run through pytest in a child process with ``--simulation-only`` (the tests
  AWS marks as runnable without hardware), each test function counted as one kernel check
  (all its parameter cases must pass).

Nothing of a snapshot is copied. Not part of `make test` (it needs the checkouts).
"""

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

import openneuron.nki as nki

TUTORIALS = "src/nki_samples/tutorials"
ROOT = Path(__file__).resolve().parent.parent.parent


def _bf16(array):
    import ml_dtypes

    return array.astype(ml_dtypes.bfloat16)


def _close(got, expected, atol, rtol):
    got = np.asarray(got).astype(np.float64)
    expected = np.asarray(expected).astype(np.float64)
    if got.shape != expected.shape:
        return False, f"shape {got.shape}, expected {expected.shape}"
    if np.allclose(got, expected, atol=atol, rtol=rtol):
        return True, "matches"
    worst = float(np.nanmax(np.abs(got - expected) / (atol + rtol * np.abs(expected))))
    return False, f"differs: {worst:.3g}x the tolerance (atol={atol}, rtol={rtol})"


# ---------------------------------------------------------------- tutorial cases
# Each case: (file under tutorials/, kernel name, run(module, rng) -> (passed, detail)).
def _tensor_add(caller, shape):
    def run(module, rng):
        a, b = _bf16(rng.random(shape, np.float32)), _bf16(rng.random(shape, np.float32))
        expected = (a.astype(np.float32) + b.astype(np.float32)).astype(a.dtype)
        return _close(getattr(module, caller)(a, b), expected, 1e-4, 1e-2)

    return run


def _transpose2d(module, rng):
    p, x, y = 5, 3, 4
    a = np.arange(p * x * y, dtype=np.int8).reshape(p, x * y)
    expected = a.reshape(p, x, y).transpose(0, 2, 1).reshape(p, x * y)
    got = module.tensor_transpose2D_kernel_(a, (x, y))
    return bool(np.array_equal(got, expected)), "equal" if np.array_equal(
        got, expected
    ) else "differs"


def _avgpool(module, rng):
    channels, height, width, pool = 2, 6, 6, 2
    x = _bf16(np.arange(channels * height * width, dtype=np.float32)).reshape(
        channels, height, width
    )
    expected = x.astype(np.float32).reshape(channels, height // pool, pool, width // pool, pool)
    expected = expected.mean(axis=(2, 4))
    return _close(module.tensor_avgpool_kernel(x, pool), expected, 1e-2, 1e-2)


def _softmax(module, rng):
    logits = np.array([[1.0, 2, 3, 4, 5], [5, 4, 3, 2, 1]], np.float32)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return _close(module.nki_softmax_kernel(logits), e / e.sum(axis=1, keepdims=True), 1e-5, 1e-5)


def _rmsnorm(module, rng):
    a, g = rng.random((250, 512), np.float32), rng.random(512, np.float32)
    expected = a / np.sqrt(np.mean(a * a, axis=1, keepdims=True)) * g
    return _close(module.nki_rmsnorm_kernel(a, g), expected, 1e-5, 1e-3)


def _layernorm(name):
    def run(module, rng):
        rows, columns, epsilon = 4 * 1024, 8 * 1024, 1e-5
        x = rng.random((rows, columns), np.float32)
        gamma, beta = rng.random(columns, np.float32), rng.random(columns, np.float32)
        mean = x.mean(axis=1, keepdims=True)
        variance = x.var(axis=1, keepdims=True)
        expected = (x - mean) / np.sqrt(variance + epsilon) * gamma + beta
        return _close(getattr(module, name)(x, epsilon, gamma, beta), expected, 1e-3, 1e-3)

    return run


def _mamba(name):
    def run(module, rng):
        batch, seq_len, channels, state = 1, 512, 256, 16
        delta = rng.random((batch, channels, seq_len), np.float32) * 0.1
        u = rng.random((batch, channels, seq_len), np.float32)
        a_matrix = -rng.random((channels, state), np.float32)
        b_matrix = rng.random((batch, state, seq_len), np.float32)
        c_matrix = rng.random((batch, state, seq_len), np.float32)
        delta_a = np.exp(delta[:, :, None, :] * a_matrix[None, :, :, None])
        delta_bu = delta[:, :, None, :] * b_matrix[:, None, :, :] * u[:, :, None, :]
        scan = np.empty_like(delta_a)
        previous = 0.0
        for i in range(seq_len):  # the driver's sequential scan
            previous = delta_a[..., i] * previous + delta_bu[..., i]
            scan[..., i] = previous
        expected = (scan * c_matrix[:, None, :, :]).sum(axis=2)
        got = getattr(module, name)(delta, u, a_matrix, b_matrix, c_matrix)
        return _close(got, expected, 1e-2, 1e-2)

    return run


def _sd_attention(module, rng):
    seqlen, d_head = 4096, 64
    q, k, v = (rng.random((seqlen, d_head), np.float32) for _ in range(3))
    expected = module.cpu_golden_attn(q, k, v)  # the tutorial file's own reference
    return _close(module.fused_self_attn_for_SD_small_head_size(q, k, v), expected, 1e-5, 1e-3)


def _matmul(name):
    def run(module, rng):
        m, k, n = (64, 128, 512) if name == "nki_matmul_basic_" else (4096, 1024, 2048)
        lhs, rhs = _bf16(rng.random((m, k), np.float32)), _bf16(rng.random((k, n), np.float32))
        expected = (lhs.astype(np.float32) @ rhs.astype(np.float32)).astype(lhs.dtype)
        got = getattr(module, name)(np.ascontiguousarray(lhs.T), rhs)
        return _close(got, expected, 1e-4, 1e-2)

    return run


def _attention_tutorial(name):
    def run(module, rng):
        # The tutorial's own test function (test_attention.py), accuracy mode.
        module.test_attn_tutorial("accuracy", getattr(module, name))
        return True, "its test passes"

    return run


def _mx(name):
    """The MX tutorial's driver cases (mx_toplevel.py, which imports torch_xla, is not run):
    data from its own generator, checked against its own golden functions (mx_cpu_utils.py)
    at its tolerance, rtol = atol = 5e-2."""

    def run(module, rng):
        import ml_dtypes as mld

        from openneuron.nki import language as nl

        utils = _import(Path(module.__file__).parent / "mx_cpu_utils.py", "")
        packed = {mld.float8_e5m2: nl.float8_e5m2_x4, mld.float4_e2m1fn: nl.float4_e2m1fn_x4}
        kernel = getattr(module, name)
        np.random.seed(0)  # the generator draws from NumPy's global state
        k, m, n = 128, 128, 512
        checks = []
        if name == "kernel_offline_quantized_mx_matmul":
            for dtype in (mld.float8_e5m2, mld.float4_e2m1fn):
                _, _, st, st_scale = utils.generate_stabilized_mx_data(dtype, (k, m * 4))
                _, _, mv, mv_scale = utils.generate_stabilized_mx_data(dtype, (k, n * 4))
                got = kernel(st, st_scale, mv, mv_scale, packed[dtype])
                golden = utils.nc_matmul_mx_golden(st, mv, st_scale, mv_scale, dtype, dtype)
                checks.append((got, golden))
        elif name == "kernel_on_device_quantize_matmul_mx":
            for st_dtype, mv_dtype in ((mld.float4_e2m1fn, mld.float8_e5m2),
                                       (mld.float8_e5m2, mld.float8_e5m2)):  # fmt: skip
                _, _, st, st_scale = utils.generate_stabilized_mx_data(st_dtype, (k, m * 4))
                mv_data, _, _, _ = utils.generate_stabilized_mx_data(mv_dtype, (k, n * 4))
                got = kernel(st, st_scale, _bf16(mv_data), packed[st_dtype], packed[mv_dtype])
                mv, mv_scale = utils.quantize_mx_golden(mv_data, mv_dtype)
                golden = utils.nc_matmul_mx_golden(st, mv, st_scale, mv_scale, st_dtype, mv_dtype)
                checks.append((got, golden))
        else:
            for use_tensor_copy in (True, False):
                st, _, _, _ = utils.generate_stabilized_mx_data(mld.float8_e5m2, (512, m))
                mv, _, _, _ = utils.generate_stabilized_mx_data(mld.float8_e5m2, (512, n))
                got = kernel(_bf16(st), _bf16(mv), nl.float8_e5m2_x4, use_tensor_copy)
                checks.append((got, st.T @ mv))
        for got, golden in checks:
            passed, detail = _close(got, golden, 5e-2, 5e-2)
            if not passed:
                return passed, detail
        return True, f"{len(checks)} driver cases match its golden"

    return run


MX_KERNELS = ["kernel_offline_quantized_mx_matmul", "kernel_on_device_quantize_matmul_mx",
              "kernel_copy_strided_quantize_matmul_mx"]  # fmt: skip
ATTENTION_VERSIONS = [f"attn_fwd_v{i}" for i in range(1, 12)] + ["attn_fwd_v8a"]
CASES = [
    ("tensor_addition/tensor_addition_nki_kernels.py", "nki_tensor_add_kernel_",
     _tensor_add("nki_tensor_add", (256, 1024))),
    ("tensor_addition/spmd_tensor_addition_nki_kernels.py", "nki_tensor_add_kernel_",
     _tensor_add("nki_tensor_add", (256, 1024))),
    ("tensor_addition/spmd_multiple_nc_tensor_addition_nki_kernels.py", "nki_tensor_add_kernel_",
     _tensor_add("nki_tensor_add_nc2", (512, 2048))),
    ("transpose2d/transpose2d_nki_kernels.py", "tensor_transpose2D_kernel_", _transpose2d),
    ("average_pool2d/average_pool2d_nki_kernels.py", "tensor_avgpool_kernel", _avgpool),
    ("softmax/softmax_nki_kernels.py", "nki_softmax_kernel", _softmax),
    ("rmsnorm/rmsnorm_nki_kernels.py", "nki_rmsnorm_kernel", _rmsnorm),
    *[("layernorm/layernorm_nki_kernel.py", name, _layernorm(name))
      for name in ("nki_layernorm_kernel_v1", "nki_layernorm_kernel_v2")],
    *[("fused_mamba/mamba_nki_kernels.py", f"mamba_v{i}", _mamba(f"mamba_v{i}"))
      for i in (1, 2, 3)],
    ("sd_attention/sd_attention_nki_kernels.py", "fused_self_attn_for_SD_small_head_size",
     _sd_attention),
    *[("matrix_multiplication/matrix_multiplication_nki_kernels.py", name, _matmul(name))
      for name in ("nki_matmul_basic_", "nki_matmul_tiled_", "nki_matmul_hoist_load_",
                   "nki_matmul_block_free_dimension_", "nki_matmul_fully_optimized_")],
    *[("attention_fwd_performance/test_attention.py", name, _attention_tutorial(name))
      for name in ATTENTION_VERSIONS],
    ("rotary/rotary_nki_kernels.py", "nki_apply_rotary_embedding", None),
    *[("mxfp-matmul/mx_kernels.py", name, _mx(name)) for name in MX_KERNELS],
]  # fmt: skip


def _import(path: Path, tag: str):
    """The file imported as it is, its directory first on sys.path (for its siblings)."""
    sys.path.insert(0, str(path.parent))
    try:
        name = f"{path.stem}"
        for stale in [m for m in sys.modules if m == name]:
            del sys.modules[stale]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(path.parent))


def _reason(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".splitlines()[0]
    return text[:300]


def run_tutorials(snapshot: Path, only: str | None):
    rows = []
    modules = {}
    for relative, kernel, run in CASES:
        path = snapshot / TUTORIALS / relative
        if not path.is_file() or (only and only not in f"{relative} {kernel}"):
            continue
        row = {"kind": "tutorial", "file": relative, "kernel": kernel}
        start = time.perf_counter()
        try:
            if relative not in modules:
                try:
                    modules[relative] = _import(path, snapshot.name)
                except BaseException as error:  # noqa: BLE001
                    modules[relative] = error
            module = modules[relative]
            if isinstance(module, BaseException):
                raise RuntimeError(f"the file does not import: {_reason(module)}") from module
            if run is None:
                row.update(passed=False, reason="no runnable case: its driver needs torch_xla")
            else:
                passed, detail = run(module, np.random.default_rng(0))
                row.update(passed=bool(passed), reason=detail)
        except BaseException as error:  # noqa: BLE001  (every failure is reported, none stops the run)
            if isinstance(error, KeyboardInterrupt):
                raise
            row.update(passed=False, reason=_reason(error), where=_where(error))
        row["wall_s"] = round(time.perf_counter() - start, 2)
        rows.append(row)
        print(f"  {'PASS' if row['passed'] else 'FAIL'} {relative}:{kernel} ({row['wall_s']} s) "
              f"{'' if row['passed'] else row['reason']}", flush=True)  # fmt: skip
    return rows


def _where(error):
    frames = traceback.extract_tb(error.__traceback__)
    outside = [
        f for f in frames if "openneuron" not in f.filename and "bench/nki" not in f.filename
    ]
    if outside:
        frame = outside[-1]
        return f"{Path(frame.filename).name}:{frame.lineno}"
    return ""


# ---------------------------------------------------------------- reference kernels
_PLUGIN = """
import json, os
try:
    import _openneuron_startup  # what an installed openneuron runs at start-up
except ImportError:  # a tree from before the start-up hook: importing openneuron installs it
    import openneuron
def _write(record):  # one line per report, so a run cut short keeps what it finished
    with open(os.environ["SAMPLES_RESULTS"], "a") as handle:
        handle.write(json.dumps(record) + "\\n")
def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        reason = ""
        if report.outcome != "passed":
            text = getattr(report, "longreprtext", "") or ""
            lines = [l for l in text.splitlines() if l.startswith("E ")]
            reason = (lines[0][2:].strip() if lines else text.strip().splitlines()[-1:] and
                      text.strip().splitlines()[-1])[:300]
        _write({"test": report.nodeid, "when": report.when,
                "outcome": report.outcome, "reason": reason})
def pytest_collectreport(report):
    if report.outcome == "failed":
        text = str(report.longrepr).strip().splitlines()
        _write({"test": report.nodeid, "when": "collect", "outcome": "failed",
                "reason": (text[-1] if text else "")[:300]})
def pytest_sessionfinish(session):
    pass
"""


def has_unit_tests(snapshot: Path) -> bool:
    """Whether the snapshot still holds test/unit and the reference kernels (to 8370e11)."""
    unit = snapshot / "test" / "unit"
    return unit.is_dir() and (snapshot / "src" / "nki_samples" / "reference").is_dir()


def run_unit_test_files(snapshot, plugin_source, pytest_args, only, timeout):
    """Runs each of the snapshot's test/unit files in its own pytest child with a results
    plug-in (`plugin_source`, which appends JSON lines to $SAMPLES_RESULTS); returns those
    records, plus one per file a time limit cut short."""
    records = []
    with tempfile.TemporaryDirectory() as scratch:
        Path(scratch, "samples_results_plugin.py").write_text(plugin_source)
        results = Path(scratch, "results.jsonl")
        env = dict(os.environ)
        # The child uses the openneuron this process imported (a source tree or an install).
        package_root = Path(nki.__file__).resolve().parent.parent.parent
        paths = [str(snapshot / "src"), scratch, str(package_root), str(ROOT)]
        env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
        env["SAMPLES_RESULTS"] = str(results)
        for test_file in sorted((snapshot / "test" / "unit").glob("test_*.py")):
            if only and only not in test_file.name:
                continue
            command = [sys.executable, "-m", "pytest", str(test_file), *pytest_args, "-q",
                       "-p", "samples_results_plugin", "-p", "no:cacheprovider"]  # fmt: skip
            start = time.perf_counter()
            try:
                subprocess.run(command, cwd=scratch, env=env, timeout=timeout, capture_output=True)
            except subprocess.TimeoutExpired:
                reason = f"cases left after the {timeout:.0f} s limit"
                records.append({"test": f"{test_file.name}::(rest)", "when": "call",
                                "outcome": "failed", "reason": reason})  # fmt: skip
            print(f"  ran {test_file.name} ({time.perf_counter() - start:.0f} s)", flush=True)
        if results.exists():
            records += [json.loads(line) for line in results.read_text().splitlines() if line]
    return records


def run_unit_tests(snapshot: Path, only: str | None, timeout: float):
    if not has_unit_tests(snapshot):
        return []  # no reference kernels in this snapshot
    outcomes = run_unit_test_files(snapshot, _PLUGIN, ["--simulation-only"], only, timeout)
    by_function = {}
    for outcome in outcomes:
        test = outcome["test"]
        function = test.split("[")[0]
        by_function.setdefault(function, []).append(outcome)
    rows = []
    for function, cases in sorted(by_function.items()):
        if function.endswith("::(rest)"):  # not a kernel: the cases a time limit cut off
            rows.append({"kind": "time-limit", "file": function.split("::")[0], "kernel": function,
                         "passed": False, "reason": cases[0]["reason"]})  # fmt: skip
            print(f"  CUT  {function}: {cases[0]['reason']}", flush=True)
            continue
        failed = [c for c in cases if c["outcome"] == "failed"]
        passed = [c for c in cases if c["outcome"] == "passed" and c["when"] == "call"]
        summary = failed[0]["reason"] if failed else ("all pass" if passed else "skipped")
        rows.append({
            "kind": "reference", "file": function.split("::")[0], "kernel": function,
            "passed": not failed and bool(passed),
            "cases": len({c["test"] for c in cases}), "cases_passed": len(passed),
            "reason": summary,
        })  # fmt: skip
        row = rows[-1]
        print(f"  {'PASS' if row['passed'] else 'FAIL'} {function} "
              f"({row['cases_passed']}/{row['cases']}) {'' if row['passed'] else row['reason']}",
              flush=True)  # fmt: skip
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("snapshots", nargs="+", type=Path, help="nki-samples checkout roots")
    parser.add_argument("--json", default="bench/results/nki_samples.json")
    parser.add_argument("--only", help="run only cases whose file or kernel name contains this")
    parser.add_argument("--unit-timeout", type=float, default=600.0, help="seconds per test file")
    parser.add_argument("--no-unit-tests", action="store_true")
    parser.add_argument("--no-tutorials", action="store_true")
    args = parser.parse_args()
    report = {"benchmark": "nki_samples_unchanged", "machine": platform.processor(), "runs": []}
    total = passed = 0
    for snapshot in args.snapshots:
        print(f"{snapshot}:", flush=True)
        rows = [] if args.no_tutorials else run_tutorials(snapshot, args.only)
        if not args.no_unit_tests:
            rows += run_unit_tests(snapshot, args.only, args.unit_timeout)
        kernels = [r for r in rows if r["kind"] != "time-limit"]
        count = sum(r["passed"] for r in kernels)
        print(f"  {count} of {len(kernels)} pass")
        total += len(kernels)
        passed += count
        report["runs"].append({"snapshot": str(snapshot), "rows": rows})
    report.update(total=total, passed=passed)
    print(f"all snapshots: {passed} of {total} kernel checks pass")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    nki  # noqa: B018  (imported first: the kernel files `import nki` / `neuronxcc.nki`)
    main()
