"""PyTorch's own Dynamo test files on neuron and on cpu, side by side.

    python -m tests.upstream.run_dynamo --pytorch-src PYTORCH_CHECKOUT [--files F ...]
        [--devices neuron cpu] [--json OUT] [-k EXPR] [--timeout SECONDS] [--reuse-xml]

The runner of tests.upstream.run (same options, output and exit status) over
PYTORCH_CHECKOUT/test/dynamo files, with the plugin tests.upstream.dynamo_plugin: on neuron the
files' tensors are made on the device (the default device) and their compiling backends are
ours; on cpu they run with PyTorch's own backends. Neuron-only failures are matched against
known_failures_dynamo.json. Files are named relative to test/ (dynamo/test_misc.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.upstream import run

# The files whose premise holds on a device (see tests/upstream/README.md), in about 10
# minutes per device on 2 cores. Left out: test_dynamic_shapes.py (its 2.1 flag
# `config.dynamic_shapes` is gone, and it imports test_export.py, which needs 2.1's
# torch._export), test_export*.py (export, no backend), test_cudagraphs.py (CUDA),
# test_nops.py (Dynamo's bytecode rewriting through its private `_optimize_catch_errors`, on
# Python ints, no backend; under the default-device mode its torch-function-mode guard fails
# on the frame that made it, so it cannot say anything about a device),
# test_minifier.py, test_replay_record.py, test_logging.py, test_comptime.py,
# test_decorators.py and test_optimizers.py (do not load on torch 2.13 or test Dynamo's
# own tooling rather than a backend).
DEFAULT_FILES = (
    "dynamo/test_backends.py",
    "dynamo/test_recompile_ux.py",
    "dynamo/test_subgraphs.py",
    "dynamo/test_aot_autograd.py",
    "dynamo/test_modules.py",
    "dynamo/test_functions.py",
    "dynamo/test_misc.py",
    "dynamo/test_repros.py",
    "dynamo/test_ctx_manager.py",
    "dynamo/test_unspec.py",
    "dynamo/test_global.py",
    "dynamo/test_skip_non_tensor.py",
    "dynamo/test_verify_correctness.py",
    "dynamo/test_python_autograd.py",
    "dynamo/test_model_output.py",
    "dynamo/test_interop.py",
)
KNOWN_FAILURES = Path(__file__).with_name("known_failures_dynamo.json")


def main(argv=None) -> int:
    return run.main(
        argv,
        description=__doc__,
        default_files=DEFAULT_FILES,
        known_failures=KNOWN_FAILURES,
        plugin="tests.upstream.dynamo_plugin",
        default_json=run.REPO / "build" / "upstream-dynamo" / "results.json",
    )


if __name__ == "__main__":
    sys.exit(main())
