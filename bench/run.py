"""Side-by-side benchmark: `neuron` eager against PyTorch CPU eager, in one process.

    make bench            # or: .venv/bin/python bench/run.py [--quick] [--json PATH]
    .venv/bin/python bench/run.py --max-cpu-isa avx2   # as on an AVX2-only CPU (both sides)

Prints a table per section and writes JSON (default bench/results/latest.json). Ratios are
CPU time / neuron time (or neuron rate / CPU rate): above 1.0 means neuron is faster. Timings
are medians of repeated runs; nothing here is a test, and no timing fails a build.
"""

import argparse
import copy
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def sync(device: str) -> None:
    if device == "neuron":
        torch.neuron.synchronize()


def median_seconds(
    fn: Callable[[], None], device: str, repeats: int, warmup: int = 2, budget: float = 20.0
) -> float:
    """Median of `repeats` timed runs after `warmup` ones; a case slower than `budget`
    seconds in all stops early (torch's bf16 mm under the AVX2 cap takes ~1 minute a call)."""
    began = time.perf_counter()
    for _ in range(warmup):
        fn()
        if time.perf_counter() - began > budget:
            break
    sync(device)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync(device)
        samples.append(time.perf_counter() - start)
        if time.perf_counter() - began > budget:
            break
    return statistics.median(samples)


# How long each turn first runs its own device's work untimed. PyTorch's OpenMP workers spin
# for milliseconds after each parallel region (libgomp's default wait policy), on the cores the
# next timed call needs; a process that runs one device, as a user's does, never sees that.
SETTLE_SECONDS = 0.025


def settle(fn: Callable[[], None], device: str) -> None:
    """Runs fn (and waits for it) for at least SETTLE_SECONDS, at least once, untimed."""
    settle_until = time.perf_counter() + SETTLE_SECONDS
    while time.perf_counter() < settle_until:
        fn()
        sync(device)


def side_by_side_seconds(
    fns: dict[str, Callable[[], None]], repeats: int, warmup: int = 2, budget: float = 40.0
) -> dict[str, float]:
    """Median seconds per device of `repeats` runs, the devices taking turns run by run, so
    a change in the host's load (other processes on a shared machine) hits both sides alike.
    Each timed call is preceded in its turn by at least SETTLE_SECONDS (and at least one call)
    of the same device's work, untimed.
    A case slower than `budget` seconds in all stops early."""
    began = time.perf_counter()
    for _ in range(warmup):
        for device, fn in fns.items():
            fn()
            sync(device)
        if time.perf_counter() - began > budget / 2:
            break
    samples: dict[str, list[float]] = {device: [] for device in fns}
    for _ in range(repeats):
        for device, fn in fns.items():
            settle(fn, device)
            start = time.perf_counter()
            fn()
            sync(device)
            samples[device].append(time.perf_counter() - start)
        if time.perf_counter() - began > budget:
            break
    return {device: statistics.median(times) for device, times in samples.items()}


def isa_label() -> str:
    """Which vector ISA each side ran: neuron's kernels (and its oneDNN), and torch's ATen."""
    import openneuron

    return f"neuron {openneuron.cpu_capability()}, torch {torch.backends.cpu.get_cpu_capability()}"


# What --max-cpu-isa avx2 sets, before torch loads: our kernels and oneDNN, OpenBLAS, and on
# the torch side ATen's kernels, MKL and torch's bundled oneDNN.
AVX2_CAP = {
    "OPENNEURON_MAX_CPU_ISA": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "OPENBLAS_CORETYPE": "Haswell",
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
}


def library_calls() -> dict:
    import openneuron

    return dict(openneuron._C._library_call_counts())


def libraries_since(before: dict) -> str:
    """The dense-math libraries neuron called since `before` (library_calls()), by count."""
    after = library_calls()
    used = {name: after[name] - before.get(name, 0) for name in after}
    names = [f"{name}:{count}" for name, count in sorted(used.items()) if count]
    return " ".join(names) if names else "own kernels"


def dispatch_overhead(quick: bool) -> list[dict]:
    """Time per op of 10,000 adds of 1-element tensors (host dispatch cost)."""
    count = 2_000 if quick else 10_000
    row = {"case": f"{count} adds of 1-element tensors"}
    for device in ("cpu", "neuron"):
        x = torch.ones(1, device=device)
        y = torch.ones(1, device=device)

        def loop(x: torch.Tensor = x, y: torch.Tensor = y) -> None:
            for _ in range(count):
                x.add(y)

        row[f"{device}_us_per_op"] = median_seconds(loop, device, repeats=5) / count * 1e6
    row["ratio"] = row["cpu_us_per_op"] / row["neuron_us_per_op"]
    row["target"] = ">= 1.0 (neuron <= CPU per op)"
    return [row]


def gemm(quick: bool) -> list[dict]:
    rows = []
    # Square products, and a transformer-sized one (tokens x hidden by hidden x 4*hidden/...).
    # Under the AVX2 cap torch's bf16 mm falls to a reference loop (about 0.1 GFLOP/s here: a
    # single 2048^3 call takes minutes), so the capped run stops at 1024^3.
    capped = os.environ.get("OPENNEURON_MAX_CPU_ISA") == "avx2"
    sizes = [(1024, 1024, 1024)] if quick or capped else [(1024, 1024, 1024), (2048, 2048, 2048)]
    sizes.append((288, 192, 768))
    for m, n, k in sizes:
        shape = f"{m}^3" if m == n == k else f"{m}x{n}x{k}"
        for dtype in (torch.float32, torch.bfloat16):
            row = {"case": f"mm {shape} {str(dtype).replace('torch.', '')}", "isa": isa_label()}
            operands = {
                device: (
                    torch.randn(m, k, dtype=dtype, device=device),
                    torch.randn(k, n, dtype=dtype, device=device),
                )
                for device in ("cpu", "neuron")
            }
            before = library_calls()
            seconds = side_by_side_seconds(
                {device: lambda ab=ab: torch.mm(*ab) for device, ab in operands.items()},
                repeats=3 if quick else 9,
            )
            row["neuron_library"] = libraries_since(before)
            for device in ("cpu", "neuron"):
                row[f"{device}_gflops"] = 2 * m * n * k / seconds[device] / 1e9
            row["ratio"] = row["neuron_gflops"] / row["cpu_gflops"]
            row["target"] = ">= 0.9"
            rows.append(row)
    return rows


def grouped_mm(quick: bool) -> list[dict]:
    """torch._grouped_mm at an MoE layer's size (8 experts x 256 tokens, 512 -> 1024), forward
    and forward + backward (the two weight and input gradients are grouped products too)."""
    rows = []
    groups, tokens, k, n = 8, 256, 512, 1024
    offsets = torch.arange(1, groups + 1, dtype=torch.int32) * tokens
    for dtype in (torch.float32, torch.bfloat16):
        operands = {}
        for device in ("cpu", "neuron"):
            generator = torch.Generator().manual_seed(0)
            a = torch.randn(groups * tokens, k, generator=generator).to(dtype).to(device)
            b = torch.randn(groups, k, n, generator=generator).to(dtype).to(device)
            cotangent = torch.randn(groups * tokens, n, generator=generator).to(dtype)
            operands[device] = (a, b, offsets.to(device), cotangent.to(device))
        name = str(dtype).replace("torch.", "")
        flops = 2 * groups * tokens * k * n
        for phase, multiple in (("forward", 1), ("forward+backward", 3)):

            def run(a, b, offs, cotangent, backward=phase != "forward"):
                if not backward:
                    torch._grouped_mm(a, b, offs)
                    return
                # A dense cotangent: torch's CPU kernel refuses the expanded one of .sum().
                a, b = a.detach().requires_grad_(), b.detach().requires_grad_()
                torch._grouped_mm(a, b, offs).backward(cotangent)

            row = {"case": f"_grouped_mm {groups}x{tokens}x{k}x{n} {name} {phase}"}
            row["isa"] = isa_label()
            before = library_calls()
            seconds = side_by_side_seconds(
                {device: lambda ops=ops: run(*ops) for device, ops in operands.items()},
                repeats=3 if quick else 9,
            )
            row["neuron_library"] = libraries_since(before)
            for device in ("cpu", "neuron"):
                row[f"{device}_gflops"] = multiple * flops / seconds[device] / 1e9
            row["ratio"] = row["neuron_gflops"] / row["cpu_gflops"]
            row["target"] = ">= 1.0"
            rows.append(row)
    return rows


def bandwidth(quick: bool) -> list[dict]:
    """out = a + b on 64 MiB float32 operands: bytes moved (2 reads, 1 write) per second."""
    elements = (64 << 20) // 4
    row = {"case": "add, 64 MiB fp32 operands"}
    for device in ("cpu", "neuron"):
        a = torch.randn(elements, device=device)
        b = torch.randn(elements, device=device)
        out = torch.empty(elements, device=device)
        seconds = median_seconds(
            lambda a=a, b=b, out=out: torch.add(a, b, out=out), device, repeats=5 if quick else 10
        )
        row[f"{device}_gb_per_s"] = 3 * elements * 4 / seconds / 1e9
    row["ratio"] = row["neuron_gb_per_s"] / row["cpu_gb_per_s"]
    row["target"] = ">= 0.85"
    return [row]


def workloads(quick: bool) -> list[dict]:
    """Median time of one training step (one forward pass for inference) per workload."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import openneuron
    from bench.workloads import WORKLOADS

    rows = []
    for name, workload in WORKLOADS.items():
        row = {"case": name, "isa": isa_label()}
        size = "small" if quick else "benchmark"
        steps = {}
        for device in ("cpu", "neuron"):
            built = workload.build(device, size=size)
            counter = iter(range(1_000_000))
            steps[device] = lambda built=built, counter=counter: built.step(next(counter))
        openneuron.clear_op_tracking()
        before = library_calls()
        seconds = side_by_side_seconds(steps, repeats=3 if quick else 9)
        for device in ("cpu", "neuron"):
            row[f"{device}_ms_per_step"] = seconds[device] * 1e3
        row["neuron_library"] = libraries_since(before)
        row["fallback_ops"] = sorted(openneuron.get_fallback_ops())
        row["ratio"] = row["cpu_ms_per_step"] / row["neuron_ms_per_step"]
        row["target"] = ">= 1.0 geomean, none below 0.8"
        rows.append(row)
    return rows


def decode(quick: bool) -> list[dict]:
    """Greedy decoding with the KV cache (transformers' generate) of a Llama-style decoder from a
    config (random weights, 4 layers of 1024, 8192-token vocabulary) in bf16 and fp32: new tokens
    per second after a 32-token prompt. Each new token is a chain of small products with one row
    (the token) against every weight, so this times the few-row GEMM path and the per-op cost."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    new_tokens, repeats = (16, 3) if quick else (48, 7)
    return [decode_row(dtype, new_tokens, repeats) for dtype in (torch.bfloat16, torch.float32)]


def decode_row(dtype: torch.dtype, new_tokens: int, repeats: int) -> dict:
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=8192,
        hidden_size=1024,
        intermediate_size=2816,
        num_hidden_layers=4,
        num_attention_heads=16,
        num_key_value_heads=4,
        max_position_embeddings=512,
    )
    model = transformers.LlamaForCausalLM(config).to(dtype).eval()
    model.generation_config.pad_token_id = 0
    prompt = torch.randint(0, 8192, (1, 32), generator=torch.Generator().manual_seed(1))
    models = {"cpu": model, "neuron": copy.deepcopy(model).to("neuron")}
    tokens: dict[str, torch.Tensor] = {}

    def generate(device: str) -> None:
        with torch.no_grad():
            out = models[device].generate(
                prompt.to(device),
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                do_sample=False,
            )
        tokens[device] = out.cpu()

    name = str(dtype).replace("torch.", "")
    row = {"case": f"Llama 4x1024 greedy decode, {new_tokens} new tokens, {name}"}
    row["isa"] = isa_label()
    before = library_calls()
    seconds = side_by_side_seconds(
        {device: lambda device=device: generate(device) for device in models}, repeats=repeats
    )
    row["neuron_library"] = libraries_since(before)
    for device in ("cpu", "neuron"):
        row[f"{device}_tokens_per_s"] = new_tokens / seconds[device]
    row["ratio"] = row["neuron_tokens_per_s"] / row["cpu_tokens_per_s"]
    # bf16 rounds once per op here (fp32 inside), the CPU at other points, so near-ties between
    # random-weight logits may pick other tokens; fp32 must pick the same ones.
    row["same_tokens"] = bool(torch.equal(tokens["cpu"], tokens["neuron"]))
    row["target"] = ">= 1.0"
    return row


def print_table(title: str, rows: list[dict]) -> None:
    print(f"\n## {title}")
    if not rows:
        return
    keys = [k for k in rows[0] if k not in ("fallback_ops",)]
    widths = {k: max(len(k), *(len(format_value(r.get(k))) for r in rows)) for k in keys}
    print("  ".join(k.ljust(widths[k]) for k in keys))
    for r in rows:
        print("  ".join(format_value(r.get(k)).ljust(widths[k]) for k in keys))
        if r.get("fallback_ops"):
            print(f"    fallback ops: {', '.join(r['fallback_ops'])}")


def format_value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def machine() -> dict:
    cpu_model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import openneuron

    details = openneuron.cpu_capability_details()
    capped = {name: os.environ[name] for name in AVX2_CAP if name in os.environ}
    return {
        "cpu_model": cpu_model,
        "neuron_isa": f"{details['capability']} (kernels {details['kernels']},"
        f" oneDNN {details['onednn']})",
        "torch_isa": torch.backends.cpu.get_cpu_capability(),
        "gemm_library": details["gemm_library"],
        "mkl": details["mkl"].split(" from ")[0],
        "caps": " ".join(f"{k}={v}" for k, v in capped.items()) or "none",
        "cores": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 1),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "latest.json")
    parser.add_argument("--sections", default="dispatch,gemm,grouped_mm,bandwidth,workloads,decode")
    parser.add_argument(
        "--markdown", type=Path, help="also write the tables as Markdown (docs/performance.md)"
    )
    parser.add_argument(
        "--max-cpu-isa",
        choices=["avx2"],
        help="cap both sides at this ISA, as on a CPU without AVX-512 (sets AVX2_CAP's variables)",
    )
    args = parser.parse_args()
    if args.max_cpu_isa and any(os.environ.get(k) != v for k, v in AVX2_CAP.items()):
        # The caps must be in place before torch, MKL, oneDNN and OpenBLAS load: start over.
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **AVX2_CAP})

    import openneuron  # noqa: F401  (registers the device even with autoload disabled)

    sections = {
        "dispatch": dispatch_overhead,
        "gemm": gemm,
        "grouped_mm": grouped_mm,
        "bandwidth": bandwidth,
        "workloads": workloads,
        "decode": decode,
    }
    results = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "sections": {}}
    print(f"machine: {results['machine']}")
    for name in args.sections.split(","):
        rows = sections[name](args.quick)
        results["sections"][name] = rows
        print_table(name, rows)
    ratios = [r["ratio"] for r in results["sections"].get("workloads", [])]
    if ratios:
        geomean = statistics.geometric_mean(ratios)
        results["workload_geomean_ratio"] = geomean
        print(f"\nworkload geomean ratio (cpu/neuron): {geomean:.3f}; min {min(ratios):.3f}")
    results["machine"]["load_average_1min_at_end"] = round(os.getloadavg()[0], 1)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {args.json}")
    if args.markdown:
        write_markdown(args.markdown, results, " ".join(sys.argv[1:]))
        print(f"wrote {args.markdown}")


PAGE_TITLE = "# Performance: `neuron` eager against PyTorch CPU eager"


def write_markdown(path: Path, results: dict, arguments: str) -> None:
    """Writes this run's tables into `path` as the eager section for its ISA caps (native, or
    the AVX2 cap) in place of that section's previous version; the rest of the page (the other
    sections and the text written between them) is kept as it was."""
    label = "AVX2 cap" if results["machine"]["caps"] != "none" else "native ISA"
    begin, end = f"<!-- eager section, {label} -->", f"<!-- end of eager section, {label} -->"
    if not path.exists():
        path.write_text(PAGE_TITLE + "\n")
    replace_section(
        path, f"{begin}\n{markdown_report(results, arguments, label)}{end}\n", begin, end
    )


def replace_section(path: Path, section: str, begin: str, end: str) -> None:
    """Puts `section` (text from marker `begin` to marker `end`) into the page at `path` in
    place of its previous version, or at the end; the rest of the page is kept."""
    page = path.read_text() if path.exists() else ""
    if begin in page and end in page:
        page = page[: page.index(begin)] + section + page[page.index(end) + len(end) + 1 :]
    else:
        page = page.rstrip("\n") + "\n\n" + section
    path.write_text(page)


def markdown_report(results: dict, arguments: str, label: str) -> str:
    """This run's tables as one section of docs/performance.md."""
    machine_info = results["machine"]
    lines = [
        f"## Eager, {label}",
        "",
        f"Measured {results['date']} with `.venv/bin/python bench/run.py {arguments}`"
        f" (`make bench` / `make bench-avx2`) on {machine_info['cores']} cores of"
        f" {machine_info['cpu_model']}, torch {machine_info['torch']}"
        f" ({machine_info['torch_threads']} CPU threads). Both devices run in the same process,"
        " taking turns run by run; each timed call follows at least 25 ms (and one call) of its"
        " own device's work, untimed (PyTorch's OpenMP threads spin for milliseconds after each"
        " call, on the cores the other device needs); each figure is a median of repeated"
        " runs. The simulated"
        " device runs on the same host CPU, so this compares the two software stacks on equal"
        " hardware.",
        "",
        f"Host load (1-minute load average, other processes included): "
        f"{machine_info['load_average_1min']} at the start, "
        f"{machine_info['load_average_1min_at_end']} at the end, on"
        f" {machine_info['cores']} cores."
        + (
            " With the load above the core count these figures are not representative: both"
            " sides lose time to other processes, and torch's OpenMP team (which waits for its"
            " slowest thread at every barrier) loses more than neuron's kernel threads, which"
            " distorts the ratios, mostly in neuron's favour. Rerun on a quiet machine"
            " before drawing conclusions."
            if machine_info["load_average_1min"] > machine_info["cores"]
            else ""
        ),
        "",
        "Ratios are CPU time / neuron time (or neuron rate / CPU rate): above 1 favours neuron.",
        "",
        f"Vector ISA: neuron {machine_info['neuron_isa']}; torch CPU"
        f" {machine_info['torch_isa']}; caps in effect: {machine_info['caps']}."
        f" Matrix-product library choice: {machine_info['gemm_library']}"
        f" (OPENNEURON_GEMM_LIBRARY); {machine_info['mkl']}."
        " `neuron_library` counts the dense-math library calls neuron made during the row's"
        " timing (`own kernels` when none).",
    ]
    for name, rows in results["sections"].items():
        if not rows:
            continue
        keys = [k for k in rows[0] if k != "fallback_ops"]
        lines += ["", f"### {name}", "", "| " + " | ".join(keys) + " |"]
        lines.append("|" + "---|" * len(keys))
        for row in rows:
            lines.append("| " + " | ".join(format_value(row.get(k)) for k in keys) + " |")
    if "workload_geomean_ratio" in results:
        lines += [
            "",
            f"Workload geomean ratio (CPU / neuron): {results['workload_geomean_ratio']:.3f}.",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
