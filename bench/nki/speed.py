"""Speed: the simulator (C++ fast executor, on a program decoded, placed and rule-checked once
per signature, its timing computed once) against a NumPy executor of the same instruction
stream, per kernel, side by side. Tracing is done once and excluded from both. Wall time and
process CPU time are both measured (medians): on a shared, loaded machine the CPU time is the
steadier figure. Prints a table and writes JSON.

    .venv/bin/python -m bench.nki.speed [--json bench/results/nki_speed.json]

The simulator runs on one thread. NumPy's BLAS (the executor's matmuls) uses its own thread pool
unless OPENBLAS_NUM_THREADS=1 is set; on a loaded machine that pool's spinning inflates the
NumPy figures of matmul kernels many times over, so compare with it set to 1 as well.
"""

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

import openneuron  # noqa: F401  (first: the kernel modules `import nki`)
from bench.nki.matmul_kernels import matmul_tiled
from bench.nki.numpy_executor import NumpyExecutor
from examples.nki.attention import flash_attention_forward
from examples.nki.elementwise import tensor_add
from examples.nki.norms import rmsnorm
from examples.nki.softmax import softmax
from openneuron.nki.kernel import CompiledLaunch, Kernel


def cases():
    rng = np.random.default_rng(0)

    def rand(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    # Small tiles (many short instructions) first, then large tiles (few, long ones).
    return [
        ("tensor_add [16384,16]", tensor_add, (rand(16384, 16), rand(16384, 16))),
        ("softmax [8192,64]", softmax, (rand(8192, 64),)),
        ("rmsnorm [8192,64]", rmsnorm, (rand(8192, 64), rand(64))),
        ("flash_attn S=1024 d=32", flash_attention_forward, (rand(1024, 32),) * 3),
        ("tensor_add [4096,512]", tensor_add, (rand(4096, 512), rand(4096, 512))),
        ("softmax [2048,1024]", softmax, (rand(2048, 1024),)),
        ("rmsnorm [2048,1024]", rmsnorm, (rand(2048, 1024), rand(1024))),
        ("flash_attn S=512 d=64", flash_attention_forward, (rand(512, 64),) * 3),
        ("matmul_tiled 512x1024x1024", matmul_tiled, (rand(1024, 512), rand(1024, 1024))),
    ]


def median_time(fn, repeats):
    """(median wall seconds, median process CPU seconds) of `repeats` calls."""
    walls, cpus = [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def cpu_features():
    try:
        flags = open("/proc/cpuinfo").read().split("flags", 1)[1].split("\n", 1)[0].split()
    except (OSError, IndexError):
        return []
    return [f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile") if f in flags]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", default="bench/results/nki_speed.json")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    blas_threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(
        f"CPU features: {' '.join(cpu_features())}; NumPy {np.__version__}; "
        f"BLAS threads {blas_threads}; load {load:.1f}"
    )
    print(
        f"{'kernel':<28} {'instr':>6} {'sim ms':>8} {'numpy ms':>9} {'speedup':>8} "
        f"{'sim cpu ms':>10} {'np cpu ms':>9} {'cpu x':>7} {'sim Minstr/s':>12}"
    )
    rows = []
    for name, kernel, arrays in cases():
        compiled = CompiledLaunch(Kernel(kernel.func), arrays, {}, "trn2")
        program = compiled.programs[0]
        inputs = {index: arrays[i] for i, index in enumerate(program.input_indices)}
        simulated, _ = compiled.run(arrays)
        executor = NumpyExecutor(program.recording, inputs)
        memory = executor.run()
        out = compiled.returned
        reference = memory[out.buffer.index].reshape(out.shape)
        agree = float(np.max(np.abs(reference - simulated.outputs)))
        sim_s, sim_cpu = median_time(lambda c=compiled, a=arrays: c.run(a), args.repeats)
        numpy_s, numpy_cpu = median_time(
            lambda r=program.recording, i=inputs: NumpyExecutor(r, i).run(), args.repeats
        )
        count = compiled.instructions
        rows.append(
            {
                "kernel": name,
                "instructions": count,
                "simulator_s": sim_s,
                "numpy_s": numpy_s,
                "speedup": numpy_s / sim_s,
                "simulator_cpu_s": sim_cpu,
                "numpy_cpu_s": numpy_cpu,
                "cpu_speedup": numpy_cpu / max(sim_cpu, 1e-9),
                "simulator_instructions_per_s": count / sim_s,
                "max_abs_difference": agree,
            }
        )
        print(
            f"{name:<28} {count:6d} {1e3 * sim_s:8.2f} {1e3 * numpy_s:9.2f} "
            f"{numpy_s / sim_s:7.1f}x {1e3 * sim_cpu:10.2f} {1e3 * numpy_cpu:9.2f} "
            f"{numpy_cpu / max(sim_cpu, 1e-9):6.1f}x {count / sim_s / 1e6:12.3f}"
        )
    speedups = [r["speedup"] for r in rows]
    geomean = float(np.exp(np.mean(np.log(speedups))))
    cpu_geomean = float(np.exp(np.mean(np.log([r["cpu_speedup"] for r in rows]))))
    print(f"geometric mean speedup {geomean:.1f}x (wall), {cpu_geomean:.1f}x (CPU time)")
    with open(args.json, "w") as handle:
        json.dump(
            {
                "benchmark": "nki_simulator_speed",
                "cpu_features": cpu_features(),
                "machine": platform.machine(),
                "geomean_speedup": geomean,
                "geomean_cpu_speedup": cpu_geomean,
                "load_average": load,
                "openblas_num_threads": blas_threads,
                "rows": rows,
            },
            handle,
            indent=2,
        )
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
