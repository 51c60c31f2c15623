"""Runs one representative workload for a few steps on the accelerator, as a user's training
script would: `openneuron check bench/check_workload.py gpt2` checks it on CPU and neuron.

    python bench/check_workload.py NAME [--steps N] [--size small|benchmark]
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.workloads import WORKLOADS, get_workload  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("name", choices=sorted(WORKLOADS))
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--size", default="small")
    parser.add_argument("--device", default="", help="default: the current accelerator")
    options = parser.parse_args()
    device = options.device or torch.accelerator.current_accelerator()
    built = get_workload(options.name).build(device, options.size)
    for i in range(options.steps):
        result = built.step(i)
        print(f"step {i}: {result.float().mean().item():.6f}")


if __name__ == "__main__":
    main()
