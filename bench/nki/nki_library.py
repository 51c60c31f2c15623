"""Conformance against AWS's NKI Library: runs its core kernels, unchanged, on the simulated
NeuronCore against the library's own PyTorch references, and writes docs/nki_coverage.md.

    .venv/bin/python -m bench.nki.nki_library PATH/TO/nki-library [--markdown docs/nki_coverage.md]

Nothing of the library is copied: it is imported from the checkout given. Each case names a
kernel, its reference, and inputs built here; the estimated trn2 latency comes from the same
run. Not part of `make test` (it needs the checkout).
"""

import argparse
import importlib
import json
import re
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import torch

import openneuron  # noqa: F401  (first: the library's modules `import nki`)
import openneuron.nki as nki

try:
    import ml_dtypes

    BF16 = ml_dtypes.bfloat16
except ImportError:  # pragma: no cover
    BF16 = None


def _rng(seed=0):
    return np.random.default_rng(seed)


def _randn(shape, dtype=np.float32, seed=0):
    return _rng(seed).standard_normal(shape).astype(np.float32).astype(dtype)


def _cumsum(shape, dtype):
    x = _randn(shape, dtype)
    return {"x": x}, {"x": _to_torch(x)}


def _cascaded_max(shape, dtype):
    x = _randn(shape, dtype, seed=1)
    return {"input_tensor": x}, {"input_tensor": _to_torch(x)}


def _rope(d_head, batch, heads, seq):
    x = _randn((d_head, batch, heads, seq), seed=2)
    angles = _rng(3).uniform(0, 6.28, (d_head // 2, batch, seq)).astype(np.float32)
    cos, sin = np.cos(angles), np.sin(angles)
    arrays = {"x_in": x, "cos": cos, "sin": sin}
    return arrays, {k: _to_torch(v) for k, v in arrays.items()}


def _cross_entropy(positions, vocab):
    logits = _randn((positions, vocab), seed=4)
    targets = _rng(5).integers(0, vocab, positions).astype(np.int32)
    kernel = {
        "logits_hbm": logits,
        "targets_hbm": targets,
        "dtype": np.float32,
        "chunk_size": min(vocab, 2048),
    }
    reference = {"logits": _to_torch(logits), "targets": torch.from_numpy(targets).long()}
    return kernel, reference


def _float_reference(arrays):
    """Reference inputs as the library's harness gives them: fp16/bf16 arrays as fp32 tensors."""
    out = {}
    for k, v in arrays.items():
        if isinstance(v, np.ndarray):
            out[k] = torch.from_numpy(v.astype(np.float32) if v.dtype.itemsize == 2 else v)
        else:
            out[k] = v
    return out


def _norm_tkg(batch, seq, hidden, dtype, beta=False, **options):
    rng = _rng(6)
    arrays = {
        "input": rng.standard_normal((batch, seq, hidden)).astype(dtype),
        "gamma": rng.standard_normal((1, hidden)).astype(dtype),
        "output": np.zeros((128, batch * seq, hidden // 128), dtype=dtype),
    }
    if beta:
        arrays["beta"] = rng.standard_normal((1, hidden)).astype(dtype)
    arrays.update(options)
    return arrays, _float_reference(arrays), ["output"]


def _rmsnorm_quant(batch, seq, hidden):
    from nkilib_src.nkilib.core.rmsnorm.rmsnorm_quant import RmsNormQuantKernelArgs
    from nkilib_src.nkilib.core.utils.common_types import NormType, QuantizationType

    rng = _rng(7)
    hidden_states = rng.standard_normal((batch, seq, hidden)).astype(np.float32).astype(BF16)
    gamma = rng.standard_normal((hidden,)).astype(np.float32).astype(BF16)
    kargs = RmsNormQuantKernelArgs(
        quantization_type=QuantizationType.ROW, lower_bound=0.0, norm_type=NormType.RMS_NORM
    )
    kernel = {"hidden": hidden_states, "ln_w": gamma, "kargs": kargs, "input_dequant_scale": None}
    return kernel, {"hidden": hidden_states, "gamma": gamma}


def rmsnorm_quant_reference(hidden, gamma, eps=1e-6):
    """RMSNorm then fp8 row quantization, as the library's kernel documents it: the normalised
    row and its dequantisation scale absmax / 240 (written here from that formula)."""
    x = hidden.astype(np.float32)
    norm = x / (np.sqrt(np.mean(x * x, axis=-1, keepdims=True)) + eps) * gamma.astype(np.float32)
    return norm, np.abs(norm).max(axis=-1, keepdims=True) / 240.0


def _compare_rmsnorm_quant(outputs, expected, tolerance):
    """The kernel's [B, S, H + 4] fp8 rows end with their fp32 dequantisation scale: compare
    the dequantised row with the normalised one, and the scales."""
    (packed,) = outputs
    norm, scale = expected
    hidden = norm.shape[-1]
    raw = np.ascontiguousarray(packed).view(np.uint8)
    got_scale = raw[..., hidden:].copy().view(np.float32)
    values = packed[..., :hidden].astype(np.float32) * got_scale
    error = float(np.abs(values - norm).max() / np.abs(norm).max())
    scale_error = float(np.abs(got_scale - scale).max() / np.abs(scale).max())
    return error <= tolerance and scale_error <= 0.007, max(error, scale_error)  # library: 0.007


def _router_topk(tokens, hidden, experts, k):
    from nkilib_src.nkilib.core.router_topk.router_topk import (
        XHBMLayout_H_T__0,
        XSBLayout_tp102__0,
    )
    from nkilib_src.nkilib.core.utils.common_types import RouterActFnType

    rng = _rng(8)

    def uniform(shape):  # the library's range: x @ w may feed a sigmoid
        return rng.uniform(-0.1, 0.1, shape).astype(np.float32).astype(BF16)

    arrays = {
        "x": uniform((hidden, tokens)),
        "w": uniform((hidden, experts)),
        "w_bias": uniform((1, experts)),
        "router_logits": np.zeros((tokens, experts), BF16),
        "expert_affinities": np.zeros((tokens, experts), BF16),
        "expert_index": np.zeros((tokens, k), np.uint32),
        "act_fn": RouterActFnType.SOFTMAX,
        "k": k,
        "x_hbm_layout": XHBMLayout_H_T__0,
        "x_sb_layout": XSBLayout_tp102__0,
    }
    return arrays, _float_reference(arrays), ["router_logits", "expert_index", "expert_affinities"]


def _attention_cte(seq, d_head, dtype, causal):
    rng = _rng(9)
    q = rng.standard_normal((1, seq, d_head)).astype(np.float32).astype(dtype)
    k = rng.standard_normal((1, d_head, seq)).astype(np.float32).astype(dtype)
    v = rng.standard_normal((1, seq, d_head)).astype(np.float32).astype(dtype)
    scale = 1.0 / np.sqrt(d_head)
    kernel = {"q": q, "k": k, "v": v, "scale": scale, "causal_mask": causal}
    return kernel, _float_reference(kernel)


def _qkv_tkg(batch, seq, hidden, fused, norm):
    from nkilib_src.nkilib.core.utils.common_types import NormType

    rng = _rng(10)
    arrays = {
        "hidden": rng.standard_normal((batch, seq, hidden)).astype(np.float32).astype(BF16),
        "qkv_w": (rng.standard_normal((hidden, fused)) / np.sqrt(hidden)).astype(BF16),
        "norm_w": rng.standard_normal((1, hidden)).astype(np.float32).astype(BF16),
        "norm_type": NormType.RMS_NORM if norm else NormType.NO_NORM,
    }
    return arrays, _float_reference(arrays)


def _mlp(batch, seq, hidden, intermediate):
    rng = _rng(11)

    def weights(rows, cols):
        return (rng.standard_normal((rows, cols)) / np.sqrt(rows)).astype(BF16)

    kernel = {
        "hidden_tensor": rng.standard_normal((batch, seq, hidden)).astype(BF16),
        "gate_proj_weights_tensor": weights(hidden, intermediate),
        "up_proj_weights_tensor": weights(hidden, intermediate),
        "down_proj_weights_tensor": weights(intermediate, hidden),
    }
    return kernel, {k.removesuffix("_tensor"): v for k, v in _float_reference(kernel).items()}


def mlp_reference(hidden, gate_proj_weights, up_proj_weights, down_proj_weights):
    """down(silu(x @ gate) * (x @ up)), the SiLU MLP the library's kernel documents (the
    library's own reference lives in its test harness, so it is written here)."""
    gate = torch.nn.functional.silu(hidden @ gate_proj_weights)
    return (gate * (hidden @ up_proj_weights)) @ down_proj_weights


def _rope_hf(batch, q_heads, k_heads, seq, d_head):
    rng = _rng(12)
    angles = rng.uniform(0, 6.28, (seq, d_head // 2)).astype(np.float32)
    angles = np.concatenate([angles, angles], axis=-1)
    arrays = {
        "q": rng.standard_normal((batch, q_heads, seq, d_head)).astype(np.float32),
        "k": rng.standard_normal((batch, k_heads, seq, d_head)).astype(np.float32),
        "q_out": np.zeros((batch, q_heads, seq, d_head), np.float32),
        "k_out": np.zeros((batch, k_heads, seq, d_head), np.float32),
        "cos": np.cos(angles)[None],
        "sin": np.sin(angles)[None],
    }
    return arrays, _float_reference(arrays), ["q_out", "k_out"]


def _find_nonzero(tokens, columns, chunk_size=None):
    x = (_rng(13).random((tokens, columns)) < 0.3).astype(np.float32)
    options = {} if chunk_size is None else {"chunk_size": chunk_size}
    return {"input_tensor": x, **options}, {"input_tensor": torch.from_numpy(x), **options}


def qkv_reference(hidden, qkv_w, norm_w, norm_type, eps=1e-6):
    """RMSNorm(hidden) · norm_w @ qkv_w, the projection qkv_tkg documents (the library's own
    reference imports its test helpers, which need the unpublished neuron_dtypes package)."""
    rms = torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + eps)
    return (hidden * rms * norm_w) @ qkv_w


# (case, kernel module, kernel, reference module, reference, inputs -> (kernel kwargs,
#  reference kwargs[, names of the kernel arguments it writes, compared instead of its
#  return value]), tolerance on the error relative to the reference's largest magnitude
#  [, comparison])
CASES = [
    (
        "cumsum fp32 [128, 2048]",
        "core.cumsum.cumsum",
        "cumsum",
        "core.cumsum.cumsum_torch",
        "cumsum_torch_ref",
        lambda: _cumsum((128, 2048), np.float32),
        1e-4,
    ),
    (
        "cumsum fp32 [1, 256]",
        "core.cumsum.cumsum",
        "cumsum",
        "core.cumsum.cumsum_torch",
        "cumsum_torch_ref",
        lambda: _cumsum((1, 256), np.float32),
        1e-4,
    ),
    (
        "cumsum bf16 [64, 4, 1024]",
        "core.cumsum.cumsum",
        "cumsum",
        "core.cumsum.cumsum_torch",
        "cumsum_torch_ref",
        lambda: _cumsum((64, 4, 1024), BF16),
        2e-2,
    ),
    (
        "cascaded_max fp32 [1, 4, 4096]",
        "core.max.cascaded_max",
        "cascaded_max",
        "core.max.cascaded_max_torch",
        "cascaded_max_torch_ref",
        lambda: _cascaded_max((1, 4, 4096), np.float32),
        1e-6,
    ),
    (
        "cascaded_max fp32 [2, 8, 32000]",
        "core.max.cascaded_max",
        "cascaded_max",
        "core.max.cascaded_max_torch",
        "cascaded_max_torch_ref",
        lambda: _cascaded_max((2, 8, 32000), np.float32),
        1e-6,
    ),
    (
        "RoPE fp32 d=128 B=2 H=2 S=8",
        "core.embeddings.rope",
        "RoPE",
        "core.embeddings.rope_torch",
        "rope_torch_ref",
        lambda: _rope(128, 2, 2, 8),
        1e-5,
    ),
    (
        "RoPE fp32 d=64 B=4 H=1 S=16",
        "core.embeddings.rope",
        "RoPE",
        "core.embeddings.rope_torch",
        "rope_torch_ref",
        lambda: _rope(64, 4, 1, 16),
        1e-5,
    ),
    (
        "cross_entropy fp32 [32, 4096]",
        "experimental.loss.cross_entropy",
        "cross_entropy_forward",
        "experimental.loss.cross_entropy_torch",
        "cross_entropy_forward_torch_ref",
        lambda: _cross_entropy(32, 4096),
        1e-4,
    ),
    (
        "rmsnorm_tkg fp16 B=1 S=8 H=2048",
        "core.subkernels.rmsnorm_tkg",
        "rmsnorm_tkg",
        "core.subkernels.rmsnorm_torch",
        "rmsnorm_tkg_torch_ref_lnc1",
        lambda: _norm_tkg(1, 8, 2048, np.float16),
        2e-2,
    ),
    (
        "rmsnorm_tkg fp16 B=1 S=1 H=4096 (3072 used)",
        "core.subkernels.rmsnorm_tkg",
        "rmsnorm_tkg",
        "core.subkernels.rmsnorm_torch",
        "rmsnorm_tkg_torch_ref_lnc1",
        lambda: _norm_tkg(1, 1, 4096, np.float16, hidden_actual=3072),
        2e-2,
    ),
    (
        "layernorm_tkg fp16 B=1 S=8 H=2048",
        "core.subkernels.layernorm_tkg",
        "layernorm_tkg",
        "core.subkernels.layernorm_torch",
        "layernorm_tkg_torch_ref_lnc1",
        lambda: _norm_tkg(1, 8, 2048, np.float16, beta=True),
        2e-2,
    ),
    (
        "rmsnorm_quant bf16 [1, 128, 4096] row fp8",
        "core.rmsnorm.rmsnorm_quant",
        "rmsnorm_quant_kernel",
        __name__,
        "rmsnorm_quant_reference",
        lambda: _rmsnorm_quant(1, 128, 4096),
        0.072,  # the library's own tolerance on the dequantised values (fp8 e4m3 rounding)
        _compare_rmsnorm_quant,
    ),
    (
        "router_topk bf16 T=32 H=3072 E=128 k=4 softmax",
        "core.router_topk.router_topk",
        "router_topk",
        "core.router_topk.router_topk_torch",
        "router_topk_torch_ref",
        lambda: _router_topk(32, 3072, 128, 4),
        2e-2,
    ),
    (
        "attention_cte bf16 causal S=512 d=64",
        "core.attention.attention_cte",
        "attention_cte",
        "core.attention.attention_cte_torch",
        "attention_cte_torch_ref",
        lambda: _attention_cte(512, 64, BF16, True),
        2e-2,
    ),
    (
        "attention_cte fp32 S=256 d=128",
        "core.attention.attention_cte",
        "attention_cte",
        "core.attention.attention_cte_torch",
        "attention_cte_torch_ref",
        lambda: _attention_cte(256, 128, np.float32, False),
        2e-2,  # the kernel computes everything but the softmax in bfloat16, fp32 inputs too
    ),
    (
        "qkv_tkg bf16 B=1 S=4 H=4096 I=512 rmsnorm",
        "core.qkv.qkv_tkg",
        "qkv_tkg",
        __name__,
        "qkv_reference",
        lambda: _qkv_tkg(1, 4, 4096, 512, True),
        2e-2,
    ),
    (
        "rope_hf fp32 B=1 Hq=4 Hk=2 S=128 d=64",
        "core.embeddings.rope_hf",
        "rope_hf",
        "core.embeddings.rope_hf_torch",
        "rope_hf_torch_ref",
        lambda: _rope_hf(1, 4, 2, 128, 64),
        1e-5,
    ),
    (
        "find_nonzero_indices fp32 T=256 C=16",
        "core.subkernels.find_nonzero_indices",
        "find_nonzero_indices",
        "core.subkernels.find_nonzero_indices_torch",
        "find_nonzero_indices_torch_ref",
        lambda: _find_nonzero(256, 16),
        0.0,
    ),
    (
        "find_nonzero_indices fp32 T=1024 C=24 chunk 256 LNC2",
        "core.subkernels.find_nonzero_indices",
        "find_nonzero_indices",
        "core.subkernels.find_nonzero_indices_torch",
        "find_nonzero_indices_torch_ref",
        lambda: _find_nonzero(1024, 24, chunk_size=256),
        0.0,
    ),
    (
        "mlp (tkg) bf16 B=1 S=4 H=1024 I=448",
        "core.mlp.mlp",
        "mlp",
        __name__,
        "mlp_reference",
        lambda: _mlp(1, 4, 1024, 448),
        2e-2,
    ),
    (
        "mlp (cte) bf16 B=1 S=512 H=1024 I=448",
        "core.mlp.mlp",
        "mlp",
        __name__,
        "mlp_reference",
        lambda: _mlp(1, 512, 1024, 448),
        2e-2,
    ),
]


def _to_torch(value):
    if isinstance(value, np.ndarray):
        if value.dtype == BF16:
            return torch.from_numpy(value.astype(np.float32)).bfloat16()
        return torch.from_numpy(value)
    return value


def _compare(got, expected, tolerance):
    got = np.asarray(got).astype(np.float32)
    expected = expected.float().numpy() if isinstance(expected, torch.Tensor) else expected
    scale = max(float(np.abs(expected).max()), 1e-30)
    error = float(np.abs(got - expected).max()) / scale
    return error <= tolerance, error


# Cases launched on more than one logical core (the kernel's own LNC sharding): name -> cores.
LOGICAL_CORES = {"find_nonzero_indices fp32 T=1024 C=24 chunk 256 LNC2": 2}


def run_case(case, package):
    name, module, kernel_name, ref_module, ref_name, build, tolerance = case[:7]
    compare = case[7] if len(case) > 7 else None
    start = time.perf_counter()
    row = {"case": name, "kernel": f"{module}.{kernel_name}"}
    try:
        kernel = getattr(importlib.import_module(f"{package}.{module}"), kernel_name)
        if name in LOGICAL_CORES:
            kernel = kernel[LOGICAL_CORES[name]]
        ref_path = ref_module if ref_module == __name__ else f"{package}.{ref_module}"
        reference = getattr(importlib.import_module(ref_path), ref_name)
        built = build()
        kernel_inputs, reference_inputs = built[:2]
        written = built[2] if len(built) > 2 else None
        result = nki.kernel.launch(kernel, (), kernel_inputs, profile="trn2")
        expected = reference(**reference_inputs)
        if isinstance(expected, dict):
            expected = list(expected.values())
        if written is not None:
            outputs = [kernel_inputs[n] for n in written]
        elif isinstance(result.outputs, (list, tuple)):
            outputs = result.outputs
        else:
            outputs = [result.outputs]
        expected = expected if isinstance(expected, (list, tuple)) else [expected]
        if compare is not None:
            errors = [compare(outputs, expected, tolerance)]
        else:
            errors = [_compare(g, e, tolerance) for g, e in zip(outputs, expected, strict=True)]
        passed = all(ok for ok, _ in errors)
        row.update(
            status="pass" if passed else "mismatch",
            max_error=max(e for _, e in errors),
            latency_us=result.latency_ns / 1e3,
            reason="" if passed else f"max relative error above {tolerance}",
        )
    except Exception as error:  # noqa: BLE001  (every failure is reported, none stops the run)
        where = ""
        if not isinstance(error, nki.KernelRuleError):  # those already name the kernel line
            last = traceback.extract_tb(error.__traceback__)[-1]
            where = f" ({Path(last.filename).name}:{last.lineno})"
        text = re.sub(r"/[^\s()'\"]*/", "", str(error)[:300])  # file names, no machine paths
        row.update(status="error", reason=f"{type(error).__name__}: {text}{where}")
    row["wall_s"] = time.perf_counter() - start
    return row


def markdown(rows, commit):
    passed = sum(r["status"] == "pass" for r in rows)
    lines = [
        "# NKI Library on the simulated NeuronCore",
        "",
        f"Generated by `python -m bench.nki.nki_library <checkout>` against AWS's NKI Library "
        f"(`{commit}`). Each kernel runs unchanged on the simulator (profile trn2) and is "
        "compared with the library's own PyTorch reference; errors are relative to the "
        "reference's largest magnitude.",
        "",
        f"**{passed} of {len(rows)} cases pass.**",
        "",
        "| case | kernel | status | max error | est. trn2 latency (µs) | reason |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        error = f"{r['max_error']:.2e}" if "max_error" in r else "-"
        latency = f"{r['latency_us']:.1f}" if "latency_us" in r else "-"
        reason = r.get("reason", "").replace("|", "\\|").replace("\n", " ")
        lines.append(
            f"| {r['case']} | `{r['kernel']}` | {r['status']} | {error} | {latency} | {reason} |"
        )
    lines += [
        "",
        "Errors name the rule or the missing feature and the kernel line; the cases are the",
        "library's core kernels whose inputs need no library test harness (kernels built on",
        "collectives, MX formats or dynamic shapes are not listed).",
        "",
        "Notes:",
        "- References: the library's own PyTorch references, except rmsnorm_quant (its",
        "  reference lives in the library's test harness: written here from the formula, compared",
        "  at the library's tolerances, 0.072 on dequantised values and 0.007 on scales), qkv_tkg",
        "  (its reference imports test helpers that need the unpublished `neuron_dtypes`) and mlp.",
        "- Latency targets: rmsnorm_quant's published figures (its design specification's µs",
        "  targets and its tests' `tpbSgCyclesSum`) are compared by `python -m",
        "  bench.nki.library_latency` (docs/nki.md, Fidelity); attention_cte's and mlp's are not.",
        "- mlp: the checkout's `core/mlp/mlp.py` does not parse (an indented docstring line",
        "  after the docstring closes, line 203), so no Python can import the wrapper.",
        "- find_nonzero_indices runs GpSimd's `nonzero_with_count` on all eight cores and",
        "  transposes tiles whose other columns were never written: those bits are moved along",
        "  and stay never written where they land (an error only where a later instruction",
        "  computes with them or stores them), as on the hardware, where they are garbage the",
        "  kernel never looks at. Its latency is an estimate: no published cost for",
        "  `nonzero_with_count` (an element a cycle per core is assumed).",
        "- attention_cte's estimate is DMA-bound: its SBUF-to-SBUF `dma_transpose` runs as one",
        "  DMA per source partition with element-sized chunks, a pessimistic cost (no published",
        "  figure for the DMA transpose path).",
    ]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--markdown", type=Path, default=Path("docs/nki_coverage.md"))
    parser.add_argument("--json", type=Path, default=Path("bench/results/nki_library.json"))
    parser.add_argument("--version", help="how to name the checkout in the report")
    args = parser.parse_args()
    source = args.checkout / "src"
    if not (source / "nkilib_src" / "nkilib").is_dir():
        sys.exit(f"{args.checkout} is not an NKI Library checkout (no src/nkilib_src/nkilib)")
    sys.path.insert(0, str(source))
    sys.path.insert(1, str(args.checkout))  # some references import the library's test helpers
    commit = args.version or "unnamed checkout"
    head = args.checkout / ".git" / "HEAD"
    if args.version is None and head.exists():
        commit = head.read_text().strip()[:40]
    rows = [run_case(case, "nkilib_src.nkilib") for case in CASES]
    for r in rows:
        print(f"{r['status']:<9} {r['case']:<40} {r.get('reason', '')[:100]}")
    args.markdown.write_text(markdown(rows, commit))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(rows, indent=2))
    print(f"wrote {args.markdown}")


if __name__ == "__main__":
    main()
