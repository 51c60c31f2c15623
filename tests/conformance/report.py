"""The full conformance sweep: every OpInfo of op_db and every ModuleInfo of module_db, at
every dtype the CPU or CUDA supports, on neuron vs CPU; writes docs/op_coverage.md and .json.

    python -m tests.conformance.report                 # full sweep, 2 worker processes
    python -m tests.conformance.report --only 'add|nn.Linear' --no-write
    python -m tests.conformance.report --cuda-only --no-write   # dtypes only CUDA has
    python -m tests.conformance.report --shard 0/4 --raw build/conformance/shard0.jsonl --no-write
    python -m tests.conformance.report --from-raw build/conformance/shard*.jsonl
    python -m tests.conformance.report --update-known-failures

Each (op, dtype) pair runs in a worker process (`--jobs` of them, fed from one queue, so
fast and slow ops balance). A worker that crashes or stalls on a pair is replaced; the pair
is recorded as a failure ("crash" / "timeout") and the sweep goes on. Results stream to a
JSON-lines file (--raw) so an interrupted sweep resumes with --resume. Exit status is 1 when a
result disagrees with known_failures.json (a new failure or an unexpected pass), else 0.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import queue
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_RAW = REPO / "build" / "conformance" / "results.jsonl"
DEFAULT_OUT = REPO / "docs"
STATUSES = ("native", "fallback", "fail", "skip")
DTYPE_ORDER = [
    "bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
    "float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128",
]  # fmt: skip
DTYPE_SHORT = {
    "bool": "b1", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "float16": "f16",
    "bfloat16": "bf16", "float32": "f32", "float64": "f64", "complex32": "c32",
    "complex64": "c64", "complex128": "c128", "float8_e4m3fn": "f8e4m3",
    "float8_e4m3fnuz": "f8e4m3z", "float8_e5m2": "f8e5m2", "float8_e5m2fnuz": "f8e5m2z",
}  # fmt: skip
# Samples per (entry, dtype): 43 of 702 OpInfos make more than 64 (max_pool2d: 1440); an evenly
# spaced 64 of them keep every pattern family while halving the sweep.
DEFAULT_MAX_SAMPLES = 64
SYMBOL = {"native": "N", "fallback": "F", "fail": "**X**", "skip": "s"}


# ----------------------------------------------------------------------------- worker side


def _worker(max_samples: int | None, timeout: float, widening: bool = True) -> None:
    """Reads "kind\tname\tdtype" lines on stdin, answers one JSON line each on the original
    stdout; everything else anything prints goes to stderr.

    The worker imports the databases once and never touches a device or a CPU thread pool
    itself; each pair runs in a forked child (fresh device state, a few ms to start), so a
    segfault or a hang costs only that pair."""
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import torch

    from . import harness
    from .catalog import modules_by_name, ops_by_name

    ops, modules = ops_by_name(), modules_by_name()
    if not widening:  # the fallback as it was before widening: CUDA-only dtypes raise
        import openneuron

        openneuron._C._set_fallback_widening(False)
    protocol.write("ready\n")
    for line in sys.stdin:
        kind, name, dtype_text = line.rstrip("\n").split("\t")
        answer = _in_child(
            lambda kind=kind, name=name, dtype_text=dtype_text: (
                harness.check_op(ops[name], getattr(torch, dtype_text), max_samples=max_samples)
                if kind == "op"
                else harness.check_module(
                    modules[name], getattr(torch, dtype_text), max_samples=max_samples
                )
            ).to_json(),
            timeout,
        )
        if isinstance(answer, str):
            answer = _failed(kind, name, dtype_text, answer, timeout)
        protocol.write(json.dumps(answer) + "\n")


def _in_child(fn, timeout: float) -> dict | str:
    """fn() run in a forked child: its JSON-able result, or "crash (...)" / "timeout"."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, send, leave without running the parent's exit handlers
        os.close(read_end)
        code = 0
        try:
            payload = json.dumps(fn()).encode()
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(payload)
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 3
        finally:
            sys.stderr.flush()
            os._exit(code)
    os.close(write_end)
    chunks, deadline = [], time.monotonic() + timeout
    with os.fdopen(read_end, "rb") as pipe:
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([pipe], [], [], max(left, 0))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return "timeout"
            chunk = os.read(pipe.fileno(), 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if status != 0 or not chunks:
        if os.WIFSIGNALED(status):
            return f"crash (signal {os.WTERMSIG(status)})"
        return f"crash (exit code {os.WEXITSTATUS(status)})"
    return json.loads(b"".join(chunks))


def _failed(kind: str, name: str, dtype: str, what: str, timeout: float) -> dict:
    return {
        "kind": kind, "name": name, "dtype": dtype, "status": "fail",
        "reason": f"neuron run {what}", "samples": 0, "checks": 0,
        "failures": [f"neuron run {what}"], "fallback_ops": {},
        "seconds": timeout if what == "timeout" else 0.0,
        "cuda_only": _is_cuda_only_pair(kind, name, dtype),
    }  # fmt: skip


def _is_cuda_only_pair(kind: str, name: str, dtype: str) -> bool:
    import torch

    from . import harness
    from .catalog import ops_by_name

    op = ops_by_name().get(name) if kind == "op" else None
    return op is not None and harness.is_cuda_only(op, getattr(torch, dtype))


# ----------------------------------------------------------------------------- parent side


# The CPU references run single-threaded: the workers already use the machine's cores, and
# ATen's OpenMP pool spinning in several processes at once made isclose alone take half the
# sweep. (neuron's kernels keep their own thread pool.) CONFORMANCE_CPU_THREADS overrides.
_CPU_THREADS = {"OMP_NUM_THREADS": os.environ.get("CONFORMANCE_CPU_THREADS", "1")}


class _WorkerProcess:
    def __init__(self, max_samples: int | None, timeout: float, log, widening: bool = True):
        cmd = [sys.executable, "-m", "tests.conformance.report", "--worker"]
        cmd += ["--timeout", str(timeout)]
        if max_samples is not None:
            cmd += ["--max-samples", str(max_samples)]
        if not widening:
            cmd += ["--no-fallback-widening"]
        self.proc = subprocess.Popen(
            cmd, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore", **_CPU_THREADS},
        )  # fmt: skip
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def ask(self, item: tuple[str, str, str], timeout: float) -> dict | str:
        """The worker's result for item, or "crash"/"timeout" (then the worker is gone)."""
        self.proc.stdin.write("\t".join(item) + "\n")
        self.proc.stdin.flush()
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            return "timeout"
        if line is None:
            self.stop()
            return f"crash (exit code {self.proc.wait()})"
        return json.loads(line)

    # Starting a worker imports torch and builds OpInfo's database: minutes on a loaded host.
    def wait_ready(self, timeout: float = 1200) -> bool:
        try:
            return self.lines.get(timeout=timeout) == "ready\n"
        except queue.Empty:
            return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _run_items(
    items, jobs: int, max_samples, timeout: float, raw_file, log, progress, *, widening=True
) -> list:
    todo: queue.Queue = queue.Queue()
    for item in items:
        todo.put(item)
    results: list[dict] = []
    lock = threading.Lock()

    def record(result: dict) -> None:
        with lock:
            results.append(result)
            raw_file.write(json.dumps(result) + "\n")
            raw_file.flush()
            progress(result, len(results), len(items))

    def serve() -> None:
        worker = None
        while True:
            try:
                item = todo.get_nowait()
            except queue.Empty:
                break
            if worker is None:
                worker = _WorkerProcess(max_samples, timeout, log, widening)
                if not worker.wait_ready():
                    worker.stop()
                    raise RuntimeError("a conformance worker failed to start; see its log")
            answer = worker.ask(item, timeout + 60)  # the worker enforces timeout itself
            if isinstance(answer, str):  # the worker died on this pair: record it, replace it
                worker = None
                answer = _failed(*item, f"worker {answer}", timeout)
            record(answer)
        if worker is not None:
            worker.stop()

    errors: list[BaseException] = []

    def serve_and_keep_errors() -> None:
        try:
            serve()
        except BaseException as error:  # noqa: BLE001 - re-raised below, in the caller's thread
            errors.append(error)

    threads = [threading.Thread(target=serve_and_keep_errors) for _ in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:  # a sweep that lost its workers must not report success on the pairs it kept
        raise errors[0]
    return results


def _all_items(
    only: str | None, with_ops: bool, with_modules: bool, cuda_only: bool = False
) -> list[tuple]:
    """(kind, name, dtype) of every pair: ops at CPU and CUDA dtypes (cuda_only: only the
    dtypes CUDA has and the CPU lacks, and no modules), modules at CPU dtypes."""
    from . import harness
    from .catalog import modules_by_name, ops_by_name

    items = []
    pattern = re.compile(only) if only else None
    if with_ops:
        for name, op in ops_by_name().items():
            if pattern is None or pattern.fullmatch(name):
                dtypes = harness.cuda_only_dtypes(op) if cuda_only else harness.op_dtypes(op)
                items += [("op", name, harness.dtype_name(d)) for d in dtypes]
    if with_modules and not cuda_only:
        for name, info in modules_by_name().items():
            if pattern is None or pattern.fullmatch(name):
                items += [
                    ("module", name, harness.dtype_name(d)) for d in harness.module_dtypes(info)
                ]
    return sorted(items, key=lambda it: (it[0] != "op", it[1], _dtype_rank(it[2])))


def _dtype_rank(dtype: str) -> int:
    return DTYPE_ORDER.index(dtype) if dtype in DTYPE_ORDER else len(DTYPE_ORDER)


def _read_raw(paths) -> list[dict]:
    latest: dict[tuple, dict] = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                latest[(r["kind"], r["name"], r["dtype"])] = r
    return list(latest.values())


# ----------------------------------------------------------------------------- the report


# float64 and complex are not NeuronCore types: they run on the host fallback by design
# (decision 4), so the device's own native rate is also given without them.
HOST_BY_DESIGN_DTYPES = frozenset({"float64", "complex32", "complex64", "complex128"})


def _on_device_dtype(r: dict) -> bool:
    return r["dtype"] not in HOST_BY_DESIGN_DTYPES


# Summary rows: op_db at the CPU's dtypes, op_db at dtypes only CUDA has, module_db, and the
# two databases again without the dtypes that stay on the host by design.
SUMMARY_ROWS = (
    ("op_db", lambda r: r["kind"] == "op" and not r.get("cuda_only")),
    ("op_db_cuda_only", lambda r: r["kind"] == "op" and r.get("cuda_only")),
    ("module_db", lambda r: r["kind"] == "module"),
    ("op_db_device", lambda r: r["kind"] == "op" and _on_device_dtype(r)),
    ("module_db_device", lambda r: r["kind"] == "module" and _on_device_dtype(r)),
)
SUMMARY_LABELS = {
    "op_db": "op_db",
    "op_db_cuda_only": "op_db, CUDA-only dtypes",
    "module_db": "module_db",
    "op_db_device": "op_db, NeuronCore dtypes (no float64/complex)",
    "module_db_device": "module_db, NeuronCore dtypes (no float64/complex)",
}


def summarize(results: list[dict]) -> dict:
    summary = {}
    for label, belongs in SUMMARY_ROWS:
        rs = [r for r in results if belongs(r)]
        counts = Counter(r["status"] for r in rs)
        ran = len(rs) - counts["skip"]
        passed = counts["native"] + counts["fallback"]
        names = {r["name"] for r in rs}
        fully_native = {
            n for n in names
            if all(r["status"] in ("native", "skip") for r in rs if r["name"] == n)
            and any(r["status"] == "native" for r in rs if r["name"] == n)
        }  # fmt: skip
        summary[label] = {
            "entries": len(names),
            "pairs": len(rs),
            **{s: counts[s] for s in STATUSES},
            "pass_rate": round(passed / ran, 4) if ran else None,
            "native_rate": round(counts["native"] / ran, 4) if ran else None,
            # The fallback pairs left out: how often a pair that ran only native kernels passed.
            "pass_rate_without_fallback": (
                round(counts["native"] / (counts["native"] + counts["fail"]), 4)
                if counts["native"] + counts["fail"]
                else None
            ),
            "entries_without_failures": len(
                names - {r["name"] for r in rs if r["status"] == "fail"}
            ),
            "entries_native_at_every_dtype": len(fully_native),
            # Passing pairs by how they were checked: values compared in at least one sample,
            # only dtype/shape/device (random or undefined values), decided by a rule.
            "passed_values_compared": sum(
                1 for r in rs if r["status"] in ("native", "fallback") and _compared_values(r)
            ),
            "passed_values_not_compared": sum(
                1 for r in rs if r["status"] in ("native", "fallback") and not _compared_values(r)
            ),  # fmt: skip
            "passed_with_fallback": counts["fallback"],
            "passed_by_rule": dict(
                Counter(
                    rule
                    for r in rs
                    if r["status"] in ("native", "fallback")
                    for rule in r.get("decided_by", {})
                )
            ),
            "stride_checks": sum(r.get("stride_checks", 0) for r in rs),
            # Pairs whose neuron run computed some op at a wider dtype on the host fallback.
            "widened_by_fallback": sum(1 for r in rs if r.get("widened_ops")),
        }
    return summary


def failure_category(reason: str) -> str:
    """Groups a failure reason: which check, and the exception type or kind of mismatch."""
    from .known import failure_category as category

    return category(re.sub(r"^(sample|input) \d+( \([^)]*\))?: ", "", reason))


def _compared_values(r: dict) -> bool:
    if r["kind"] == "module":
        return True  # modules always compare values
    return r.get("value_samples", r.get("samples", 0)) > 0


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def write_report(results, out_dir: Path, command: str, seconds: float | None, known) -> None:
    import torch

    from . import known as known_module

    summary = summarize(results)
    unexpected_failures, unexpected_passes = known_module.mismatches(known, results)
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = _git_commit()
    every_pair = {(k, n, d) for k, n, d in _all_items(None, True, True)}
    ran = {(r["kind"], r["name"], r["dtype"]) for r in results}
    meta = {
        "pairs_in_databases": len(every_pair),
        "pairs_reported": len(ran & every_pair),
        "generated": generated,
        "torch_version": torch.__version__,
        "commit": commit,
        "command": command,
        "wall_seconds": None if seconds is None else round(seconds),
        "summary": summary,
        "unexpected_failures": len(unexpected_failures),
        "unexpected_passes": len(unexpected_passes),
    }
    ordered = sorted(results, key=lambda r: (r["kind"] != "op", r["name"], _dtype_rank(r["dtype"])))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "op_coverage.json").write_text(
        json.dumps({**meta, "results": ordered}, indent=0) + "\n"
    )
    lines = _markdown(meta, ordered, unexpected_failures, unexpected_passes)
    (out_dir / "op_coverage.md").write_text("\n".join(lines) + "\n")


def _cuda_only_section(results: list[dict]) -> list[str]:
    """The pairs at dtypes CUDA has and the CPU lacks: status, the dtype the CPU reference
    ran at, what neuron's host fallback widened, and the reason."""
    if not results:
        return []
    counts = Counter(r["status"] for r in results)
    lines = [
        "",
        "## CUDA-only dtypes (op_db)",
        "",
        "Dtypes OpInfo lists for CUDA and not for the CPU (libraries take CUDA's path on "
        "`neuron`, so it must accept them; DESIGN.md decision 17). The CPU reference runs at "
        "the nearest wider dtype the CPU has and is rounded once to the dtype the op returns "
        "(its meta kernel's); the host fallback widens the same way where the CPU kernel lacks "
        "the dtype. "
        + ", ".join(f"{counts[s]} {s}" for s in STATUSES)
        + f" of {len(results)} pairs.",
        "",
        "| entry | dtype | status | CPU reference at | neuron fallback widened | reason |",
        "|---|---|---|---|---|---|",
    ]
    for r in sorted(results, key=lambda r: (r["name"], _dtype_rank(r["dtype"]))):
        widened = "; ".join(
            f"`{op}` " + ", ".join(f"{_short(a)}→{_short(b)}" for a, b in sorted(d.items()))
            for op, d in sorted(r.get("widened_ops", {}).items())
        )
        reason = r["reason"].replace("\n", " ").replace("|", "/")[:200]
        lines.append(
            f"| `{r['name']}` | {r['dtype']} | {SYMBOL[r['status']]} | "
            f"{r.get('widened_to', '')} | {widened} | {reason} |"
        )
    return lines


def _short(dtype: str) -> str:
    return dtype.removeprefix("torch.")


def _git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
            check=True,
        ).stdout.strip()  # fmt: skip
    except Exception:
        return "unknown"


def _markdown(meta, results, unexpected_failures, unexpected_passes) -> list[str]:
    s = meta["summary"]
    wall = f", {meta['wall_seconds'] / 60:.1f} min wall" if meta["wall_seconds"] else ""
    lines = [
        "# Op coverage of the `neuron` backend",
        "",
        "PyTorch's own OpInfo (`op_db`) and ModuleInfo (`module_db`) databases, run on `neuron`",
        "and compared with PyTorch CPU eager, at every dtype the CPU or CUDA supports for each "
        "entry (a dtype only CUDA has is compared with the CPU at a wider dtype, rounded once: "
        "[CUDA-only dtypes](#cuda-only-dtypes-op_db)).",
        f"Generated {meta['generated']} with torch {meta['torch_version']} at commit "
        f"{meta['commit']}{wall} by:",
        "",
        f"    {meta['command']}",
        "",
        "Per (entry, dtype): **N** native (every check passed with zero host fallbacks), "
        "**F** fallback (correct, but some op ran on the host fallback), **X** fail (the CPU "
        "ran a sample and neuron gave a different result or raised), **s** skip (no sample ran "
        "on the CPU). Checks per sample: forward values/dtype/shape, gradients "
        "(floating dtypes), out=, in-place, non-contiguous inputs. Details: "
        "`tests/conformance/README.md`; every result with its reason: `op_coverage.json`.",
        "",
        "## Totals",
        "",
        *(
            [
                f"**Partial run: {meta['pairs_reported']} of the {meta['pairs_in_databases']} "
                "(entry, dtype) pairs** (the pairs `known_failures.json` lists first, then in "
                "name order); the figures below count only those.",
                "",
            ]
            if meta["pairs_reported"] < meta["pairs_in_databases"]
            else []
        ),
        "| database | entries | (entry, dtype) pairs | native | fallback | fail | skip "
        "| pass rate | native rate | pass rate without fallback pairs | entries with no failure "
        "| entries native at every dtype |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label in SUMMARY_LABELS:
        x = s[label]
        lines.append(
            f"| {SUMMARY_LABELS[label]} | {x['entries']} | {x['pairs']} | {x['native']} | "
            f"{x['fallback']} | "
            f"{x['fail']} | {x['skip']} | {_pct(x['pass_rate'])} | {_pct(x['native_rate'])} | "
            f"{_pct(x.get('pass_rate_without_fallback'))} | "
            f"{x['entries_without_failures']} | {x['entries_native_at_every_dtype']} |"
        )
    lines += [
        "",
        "Pass rate = (native + fallback) / (pairs - skip); native rate = native / (pairs - skip); "
        "pass rate without fallback pairs = native / (native + fail), the fallback pairs left out.",
        "",
        "How the passing pairs were checked:",
        "",
        "| database | values compared | values not compared (random/undefined outputs) "
        "| ran the host fallback | passed by the float64 arbiter | passed by the CPU layout rule "
        "| output strides checked against the meta kernel (outputs) |",
        "|---|---|---|---|---|---|---|",
    ]
    for label in SUMMARY_LABELS:
        x = s[label]
        rules = x["passed_by_rule"]
        lines.append(
            f"| {SUMMARY_LABELS[label]} | {x['passed_values_compared']} | "
            f"{x['passed_values_not_compared']} | "
            f"{x['passed_with_fallback']} | {rules.get('float64 arbiter', 0)} | "
            f"{rules.get('CPU layout-dependent', 0)} | {x['stride_checks']} |"
        )
    lines += [
        "",
        "A pass by the float64 arbiter: some value missed the CPU's beyond tolerance but was at "
        "least as close to the float64 result as the CPU's at every element (README.md beside "
        "the harness); the pair's reason in `op_coverage.json` names the first such value. "
        "A pass by the CPU layout rule: some value missed the CPU's but equals, at every "
        "element, the CPU's own result for the same inputs in another memory layout, where the "
        "CPU's layouts disagree (layouts.py). The CPU reference of the pairs in "
        "`harness.CPU_REFERENCE_AT_FLOAT32` (16-bit grid_sample) is the CPU at float32, rounded "
        "once; their reason says so.",
        "",
        f"Against `tests/conformance/known_failures.json`: {len(unexpected_failures)} "
        f"unexpected failures, {len(unexpected_passes)} unexpected passes.",
        "",
        "## By dtype (op_db, the CPU's dtypes)",
        "",
        "| dtype | native | fallback | fail | skip |",
        "|---|---|---|---|---|",
    ]
    by_dtype: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        if r["kind"] == "op" and not r.get("cuda_only"):
            by_dtype[r["dtype"]][r["status"]] += 1
    for dtype in sorted(by_dtype, key=_dtype_rank):
        c = by_dtype[dtype]
        lines.append(f"| {dtype} | {c['native']} | {c['fallback']} | {c['fail']} | {c['skip']} |")

    fallback_pairs: Counter = Counter()
    for r in results:
        for aten_op in r["fallback_ops"]:
            fallback_pairs[aten_op] += 1
    lines += [
        "",
        "## ATen ops that fell back most",
        "",
        "Number of (entry, dtype) pairs whose neuron run sent this op to the host fallback "
        "(float64 and complex fall back by design).",
        "",
        "| ATen op | pairs |",
        "|---|---|",
    ]
    lines += [f"| `{op}` | {n} |" for op, n in fallback_pairs.most_common(60)]

    categories: dict[str, list] = defaultdict(list)
    for r in results:
        if r["status"] == "fail":
            categories[failure_category(r["reason"])].append(r)
    lines += [
        "",
        "## Failure categories",
        "",
        "| failures | category | examples |",
        "|---|---|---|",
    ]
    for category, rs in sorted(categories.items(), key=lambda kv: -len(kv[1]))[:60]:
        examples = ", ".join(sorted({f"`{r['name']}`" for r in rs})[:6])
        lines.append(f"| {len(rs)} | {category.replace('|', '/')} | {examples} |")

    lines += _cuda_only_section([r for r in results if r.get("cuda_only")])

    for kind, title in (("op", "op_db"), ("module", "module_db")):
        rs = [r for r in results if r["kind"] == kind]
        dtypes = sorted({r["dtype"] for r in rs if not r.get("cuda_only")}, key=_dtype_rank)
        # The dtypes only CUDA has get one column of their own, e.g. "f16 F, c32 X".
        cuda_column = kind == "op" and any(r.get("cuda_only") for r in rs)
        header = [DTYPE_SHORT.get(d, d) for d in dtypes] + (["CUDA-only"] if cuda_column else [])
        lines += [
            "",
            f"## {title}: every entry",
            "",
            "| entry | " + " | ".join(header) + " |",
            "|---|" + "---|" * len(header),
        ]
        by_name: dict[str, dict[str, str]] = defaultdict(dict)
        cuda_cells: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for r in rs:
            if r.get("cuda_only"):
                cuda_cells[r["name"]].append((r["dtype"], SYMBOL[r["status"]]))
            else:
                by_name[r["name"]][r["dtype"]] = SYMBOL[r["status"]]
        for name in sorted(set(by_name) | set(cuda_cells)):
            cells = [by_name[name].get(d, "") for d in dtypes]
            if cuda_column:
                pairs = sorted(cuda_cells[name], key=lambda c: _dtype_rank(c[0]))
                cells.append(", ".join(f"{DTYPE_SHORT.get(d, d)} {sym}" for d, sym in pairs))
            lines.append(f"| `{name}` | " + " | ".join(cells) + " |")

    lines += ["", "## Failures", ""]
    for r in results:
        if r["status"] == "fail":
            reason = r["reason"].replace("\n", " ")[:300]
            lines.append(f"- `{r['name']}` {r['dtype']}: {reason}")
    if unexpected_passes:
        lines += ["", "## Unexpected passes (remove from known_failures.json)", ""]
        lines += [f"- `{r['name']}` {r['dtype']}: now {r['status']}" for r in unexpected_passes]
    return lines


# ----------------------------------------------------------------------------- main


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("CONFORMANCE_JOBS", 2)))
    parser.add_argument("--only", help="regular expression on entry names (full match)")
    parser.add_argument(
        "--shard",
        default=os.environ.get("CONFORMANCE_SHARD"),
        help="i/n: run only every n-th (entry, dtype) pair from the i-th",
    )
    parser.add_argument(
        "--max-samples",
        type=int,
        default=DEFAULT_MAX_SAMPLES,
        help="samples per pair, evenly spaced over the list (0: all)",
    )
    parser.add_argument("--timeout", type=float, default=300, help="seconds per pair")
    parser.add_argument(
        "--cuda-only",
        action="store_true",
        help="only the op dtypes CUDA has and the CPU lacks (no modules)",
    )
    parser.add_argument(
        "--no-fallback-widening",
        action="store_true",
        help="turn the host fallback's dtype widening off in the workers (as before it existed)",
    )
    parser.add_argument(
        "--pairs",
        type=Path,
        help="JSON-lines file whose lines name a kind, name and dtype: run only those pairs",
    )
    parser.add_argument("--no-ops", action="store_true")
    parser.add_argument("--no-modules", action="store_true")
    parser.add_argument("--raw", type=Path, default=DEFAULT_RAW, help="JSON-lines results")
    parser.add_argument("--resume", action="store_true", help="skip pairs already in --raw")
    parser.add_argument("--from-raw", type=Path, nargs="+", help="only write the report")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--no-write", action="store_true", help="do not write docs/")
    parser.add_argument("--update-known-failures", action="store_true")
    parser.add_argument(
        "--known-first", action="store_true", help="run the pairs known_failures.json lists first"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        _worker(args.max_samples, args.timeout, widening=not args.no_fallback_widening)
        return 0

    from . import known as known_module

    command = (
        "python -m tests.conformance.report"
        + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    )
    started = time.monotonic()
    known = known_module.load()
    if args.from_raw:
        results = _read_raw(args.from_raw)
    else:
        items = _all_items(args.only, not args.no_ops, not args.no_modules, args.cuda_only)
        if args.shard:
            index, count = (int(x) for x in args.shard.split("/"))
            items = items[index::count]
        if args.pairs:
            wanted = {(r["kind"], r["name"], r["dtype"]) for r in _read_raw([args.pairs])}
            items = [it for it in items if it in wanted]
        args.raw.parent.mkdir(parents=True, exist_ok=True)
        previous = _read_raw([args.raw]) if args.resume and args.raw.exists() else []
        done = {(r["kind"], r["name"], r["dtype"]) for r in previous}
        items = [it for it in items if it not in done]
        if args.known_first:  # the listed pairs first: their signatures are what a rerun updates
            listed = {(kind, name, dtype) for kind, name, dtype, _ in known_module.entries(known)}
            items.sort(key=lambda it: it not in listed)
        print(f"{len(items)} (entry, dtype) pairs to run with {args.jobs} workers", flush=True)
        log_path = args.raw.with_suffix(".log")
        with open(args.raw, "a" if args.resume else "w") as raw_file, open(log_path, "w") as log:
            results = previous + _run_items(
                items, args.jobs, args.max_samples, args.timeout, raw_file, log, _progress,
                widening=not args.no_fallback_widening,
            )  # fmt: skip
    seconds = None if args.from_raw else time.monotonic() - started

    unexpected_failures, unexpected_passes = known_module.mismatches(known, results)
    summary = summarize(results)
    for label, x in summary.items():
        if not x["pairs"]:
            continue
        print(
            f"{SUMMARY_LABELS[label]}: {x['pairs']} pairs: {x['native']} native, "
            f"{x['fallback']} fallback, "
            f"{x['fail']} fail, {x['skip']} skip; pass rate {_pct(x['pass_rate'])}, "
            f"native rate {_pct(x['native_rate'])}"
        )
    if seconds is not None:
        print(f"wall time {seconds / 60:.1f} min")
    if args.update_known_failures:
        known = known_module.updated(known, results)
        known_module.save(known)
        print(f"rewrote {known_module.KNOWN_FAILURES_PATH.name}")
    if not args.no_write:
        write_report(results, args.out, command, seconds, known)
        print(f"wrote {args.out / 'op_coverage.md'} and op_coverage.json")
    if args.update_known_failures:
        return 0
    for r in unexpected_failures[:50]:
        print(f"UNEXPECTED FAILURE {r['kind']} {r['name']} {r['dtype']}: {r['reason'][:200]}")
    for r in unexpected_passes[:50]:
        print(f"UNEXPECTED PASS {r['kind']} {r['name']} {r['dtype']}: now {r['status']}")
    print(
        f"{len(unexpected_failures)} unexpected failures, {len(unexpected_passes)} unexpected "
        "passes against known_failures.json"
    )
    return 1 if unexpected_failures or unexpected_passes else 0


_last_print = [0.0]


def _progress(result: dict, done: int, total: int) -> None:
    now = time.monotonic()
    if result["status"] == "fail" and "neuron run" in result["reason"]:
        print(f"  {result['name']} {result['dtype']}: {result['reason']}", flush=True)
    if now - _last_print[0] > 30 or done == total:
        _last_print[0] = now
        print(f"  {done}/{total} pairs done (last: {result['name']} {result['dtype']})", flush=True)


if __name__ == "__main__":
    sys.exit(main())
