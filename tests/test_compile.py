"""torch.compile on neuron: the backend against eager, its caches, options, errors and metrics.

These tests compile with options={"bitwise": True}: programs then run every pointwise op with
the kernel library's own loop (fused, tile by tile) and every other op through the same ATen
kernels as eager, so compiled results must equal eager results bit for bit; each comparison
below is exact. The default mode, held to the float64 accuracy rule instead, is tested in
test_compile_accuracy.py and by the fuzzer slices at the end of this file.
"""

import logging
import os
import sys
import warnings

import pytest
import torch

import openneuron
from openneuron.compile import cache

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.workloads import WORKLOADS  # noqa: E402
from tests.compile_fixtures import compile_fault, fresh_compiler  # noqa: E402, F401
from tests.compile_fuzz import fuzz  # noqa: E402

# Compiled results equal eager's bit for bit only in this mode.
BITWISE = {"bitwise": True}


class Block(torch.nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.linear = torch.nn.Linear(width, width)
        self.norm = torch.nn.LayerNorm(width)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.linear(x)) * 0.5 + x
        return torch.tanh(self.norm(h)).sigmoid() - 0.25


def block_and_input(batch=6, dtype=torch.float32):
    torch.manual_seed(0)
    model = Block().to("neuron", dtype)
    x = torch.randn(batch, 7, 32, device="neuron", dtype=dtype, requires_grad=True)
    return model, x


def forward_and_grads(fn, model, x):
    for p in model.parameters():
        p.grad = None
    x.grad = None
    y = fn(x)
    (y * y).sum().backward()
    return [y.detach().cpu(), x.grad.cpu()] + [p.grad.cpu() for p in model.parameters()]


def assert_bitwise(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert u.dtype == v.dtype and u.shape == v.shape
        assert torch.equal(u, v), (u - v).abs().max()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_forward_and_backward_equal_eager_bitwise(dtype):
    model, x = block_and_input(dtype=dtype)
    eager = forward_and_grads(model, model, x)
    compiled = forward_and_grads(torch.compile(model, backend="neuron", options=BITWISE), model, x)
    assert_bitwise(eager, compiled)
    metrics = openneuron.compile_metrics()
    assert metrics["graphs"] == 2  # forward and backward
    assert metrics["fused_kernels"] > 0 and metrics["fused_ops"] > metrics["fused_kernels"]
    assert metrics["gemm_epilogues"] >= 1  # the linear layer's gelu, scale and residual add
    assert metrics["lowering_fallbacks"] == {}
    # Every ATen result had the strides its meta kernel promised: no copy hid a stride bug.
    assert metrics["layout_repairs"] == 0
    assert metrics["compile_ms"] > 0


class ConvBlock(torch.nn.Module):
    """A convolution with its bias, relu and a residual add: one conv epilogue forward."""

    def __init__(self, channels=8):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x)) + x


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_conv_epilogue_equals_eager_bitwise(dtype):
    torch.manual_seed(0)
    model = ConvBlock().to("neuron", dtype)
    x = torch.randn(4, 8, 20, 20, device="neuron", dtype=dtype, requires_grad=True)
    eager = forward_and_grads(model, model, x)
    compiled = forward_and_grads(torch.compile(model, backend="neuron", options=BITWISE), model, x)
    assert_bitwise(eager, compiled)
    metrics = openneuron.compile_metrics()
    # Training: the conv (its bias inside) and relu; relu's result is saved for the backward
    # (through a detach, an extern), which ends the elementwise group before the residual add.
    assert metrics["conv_epilogues"] == 1
    assert metrics["lowering_fallbacks"] == {}
    # Inference: the epilogue holds relu and the residual add.
    torch._dynamo.reset()
    openneuron.reset_compile_metrics()
    with torch.no_grad():
        assert_bitwise(
            [model(x).cpu()], [torch.compile(model, backend="neuron", options=BITWISE)(x).cpu()]
        )
    assert openneuron.compile_metrics()["conv_epilogues"] == 1


def test_cnn_workload_inference_with_folded_batch_norm_fuses_its_convolutions():
    """The CNN workload's model for inference, each batch norm folded into its convolution: the
    first convolution runs with its relu fused; the second's relu joins the average pool's mean
    (an epilogue ends in no reduction) unless reductions stay unfused. (In training, the
    workload's convolutions feed batch norm, which is no elementwise op and needs the
    convolution's result saved, so nothing fuses there.)"""
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = WORKLOADS["cnn"].build("neuron")
        for _ in range(2):  # running statistics that are not the initial ones
            built.step(0)
    features = built.model.features.eval()
    features[0] = fuse_conv_bn_eval(features[0], features[1])
    features[1] = torch.nn.Identity()
    features[4] = fuse_conv_bn_eval(features[4], features[5])
    features[5] = torch.nn.Identity()
    model = built.model.eval()
    x = torch.randn(8, 3, 32, 32, generator=torch.Generator().manual_seed(5)).to("neuron")
    with torch.no_grad():
        expected = model(x).cpu()
        got = torch.compile(model, backend="neuron", options=BITWISE)(x).cpu()
        assert_bitwise([expected], [got])
        assert openneuron.compile_metrics()["conv_epilogues"] == 1
        torch._dynamo.reset()
        openneuron.reset_compile_metrics()
        got = torch.compile(model, backend="neuron", options={**BITWISE, "reductions": False})(
            x
        ).cpu()
        assert_bitwise([expected], [got])
        assert openneuron.compile_metrics()["conv_epilogues"] == 2


def attention_scores(q, k, v, mask):
    """Attention written out: matmul lowers to bmm, whose scale and mask add (softmax's input)
    fuse into it."""
    scores = q @ k.transpose(-2, -1) * (q.shape[-1] ** -0.5) + mask
    return scores.softmax(-1) @ v


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_bmm_epilogue_equals_eager_bitwise(dtype):
    torch.manual_seed(0)
    q, k, v = (
        torch.randn(2, 4, 24, 16, device="neuron", dtype=dtype, requires_grad=True)
        for _ in range(3)
    )
    mask = torch.randn(2, 1, 24, 24, device="neuron", dtype=dtype)

    def run(fn):
        q.grad = k.grad = v.grad = None
        y = fn(q, k, v, mask)
        (y.float() * y.float()).sum().backward()
        return [y.detach().cpu(), q.grad.cpu(), k.grad.cpu(), v.grad.cpu()]

    eager = run(attention_scores)
    compiled = run(torch.compile(attention_scores, backend="neuron", options=BITWISE))
    assert_bitwise(eager, compiled)
    assert openneuron.compile_metrics()["bmm_epilogues"] >= 1  # the scores' scale and mask add


def spelled_out_norms(x, weight):
    """An RMS norm and a softmax written with sum/mean/amax: reductions with pointwise producers."""
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * weight
    shifted = (h - h.amax(-1, keepdim=True)).exp()
    return (shifted / shifted.sum(-1, keepdim=True)).to(x.dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_reductions_equal_eager_bitwise(dtype):
    torch.manual_seed(0)
    x = torch.randn(8, 64, 96, device="neuron", dtype=dtype, requires_grad=True)  # 2 tiles
    weight = torch.randn(96, device="neuron", requires_grad=True)

    def run(fn):
        x.grad = weight.grad = None
        y = fn(x, weight)
        (y.float() * torch.arange(96, device="neuron")).sum().backward()
        return [y.detach().cpu(), x.grad.cpu(), weight.grad.cpu()]

    eager = run(spelled_out_norms)
    compiled = run(torch.compile(spelled_out_norms, backend="neuron", options=BITWISE))
    assert_bitwise(eager, compiled)
    # Forward: the square into the mean, the shifted exp into the sum; backward: more sums.
    assert openneuron.compile_metrics()["fused_reductions"] >= 3


def test_compiles_with_structured_trace_logging_on():
    """AOTAutograd's trace log prints the graph's fake neuron tensors; printing them must not
    touch data (it once ran masked_select under fake mode and every graph fell back to eager)."""
    trace_log = torch._logging._internal.trace_log
    handler = logging.NullHandler()
    previous_level = trace_log.level
    trace_log.addHandler(handler)
    trace_log.setLevel(logging.DEBUG)
    try:
        model, x = block_and_input()
        eager = forward_and_grads(model, model, x)
        compiled = forward_and_grads(
            torch.compile(model, backend="neuron", options=BITWISE), model, x
        )
    finally:
        trace_log.removeHandler(handler)
        trace_log.setLevel(previous_level)
    assert_bitwise(eager, compiled)
    assert openneuron.compile_metrics()["graphs"] == 2


def test_fake_neuron_tensors_print_without_data():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake = mode.from_tensor(torch.randn(3, device="neuron"))
        assert repr(fake) == "FakeTensor(..., device='neuron:0', size=(3,))"
    assert "device='neuron:0'" in repr(torch.ones(2, device="neuron"))


def test_a_wrong_eager_kernel_is_caught():
    """The comparison has teeth: a wrong `tanh` registered for neuron makes eager differ from
    the compiled program, whose fused kernel computes tanh itself."""
    model, x = block_and_input()
    with torch.no_grad():
        compiled = torch.compile(model, backend="neuron", options=BITWISE)(x).cpu()
    library = torch.library.Library("aten", "IMPL")
    library.impl(
        "tanh", lambda t: torch.ops.aten.tanh.default(t.cpu()).mul(1.01).to(t.device), "PrivateUse1"
    )
    try:
        with torch.no_grad():
            wrong = model(x).cpu()
    finally:
        del library
    assert not torch.equal(wrong, compiled)


def test_inference_modes():
    model, x = block_and_input()
    with torch.no_grad():
        expected = model(x).cpu()
        assert torch.equal(
            torch.compile(model, backend="neuron", options=BITWISE)(x).cpu(), expected
        )
    torch._dynamo.reset()
    with torch.inference_mode():
        assert torch.equal(
            torch.compile(model, backend="neuron", options=BITWISE)(x).cpu(), expected
        )


def test_default_backend_routes_neuron_graphs_to_ours():
    model, x = block_and_input()
    with torch.no_grad():
        out = torch.compile(model)(x)
    assert out.device.type == "neuron"
    assert openneuron.compile_metrics()["graphs"] == 1


@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt2", "llama", "bert-fp32", "bert-bf16"])
def test_workloads_compiled_equal_eager(name):
    """Ten training steps (forward passes for BERT) compiled give eager's losses, bit for bit."""
    steps = 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eager = WORKLOADS[name].build("neuron")
        expected = [eager.step(i).float().cpu() for i in range(steps)]
        compiled = WORKLOADS[name].build("neuron")
        compiled.compile(backend="neuron", options=BITWISE)
        got = [compiled.step(i).float().cpu() for i in range(steps)]
    assert_bitwise(expected, got)
    for p, q in zip(eager.model.parameters(), compiled.model.parameters()):
        assert torch.equal(p.detach().cpu(), q.detach().cpu())
    metrics = openneuron.compile_metrics()
    assert metrics["graphs"] >= 1 and metrics["fused_kernels"] > 0
    assert metrics["lowering_fallbacks"] == {}
    assert metrics["layout_repairs"] == 0
    # Every linear layer's consumer fuses into its GEMM (the CNN's convolutions feed batch norm,
    # which is not elementwise: no conv epilogue there).
    assert metrics["gemm_epilogues"] > 0 or name == "cnn"


def test_dynamic_shapes_compile_each_graph_once():
    model, _ = block_and_input()
    compiled = torch.compile(model, backend="neuron", dynamic=True, options=BITWISE)
    for n in (3, 5, 8, 13, 21):
        x = torch.randn(n, 7, 32, device="neuron", requires_grad=True)
        assert_bitwise(forward_and_grads(model, model, x), forward_and_grads(compiled, model, x))
    metrics = openneuron.compile_metrics()
    assert metrics["recompiles"] == 0
    assert metrics["graphs"] == 2


def test_mark_dynamic_and_automatic_dynamic():
    model, _ = block_and_input()
    compiled = torch.compile(model, backend="neuron", options=BITWISE)
    with torch.no_grad():
        for n in (4, 6, 9, 11):  # the second size makes Dynamo's automatic dynamic kick in
            x = torch.randn(n, 7, 32, device="neuron")
            assert torch.equal(compiled(x).cpu(), model(x).cpu())
        metrics = openneuron.compile_metrics()
        assert metrics["graphs"] == 2
        assert metrics["recompiles"] == 1  # size 6 recompiles the frame dynamic; 9 and 11 reuse it
        torch._dynamo.reset()
        x = torch.randn(5, 7, 32, device="neuron")
        torch._dynamo.mark_dynamic(x, 0)
        compiled = torch.compile(model, backend="neuron", options=BITWISE)
        compiled(x)
        compiled(torch.randn(12, 7, 32, device="neuron"))
    metrics = openneuron.compile_metrics()
    # The marked graph is the automatic-dynamic one: AOTAutograd's cache still holds it.
    assert metrics["graphs"] == 2 and metrics["cache_hits_aot"] == 1
    assert metrics["recompiles"] == 1  # a marked dimension compiles dynamic the first time


def test_eager_kernels_leave_torch_thread_count_alone():
    """An inline oneDNN kernel on the caller's thread once left OpenMP at one thread, which
    changed torch.get_num_threads() and made Dynamo recompile every graph."""
    before = torch.get_num_threads()
    a = torch.randn(64, 64, device="neuron")
    torch.nn.functional.gelu(a @ a).cpu()
    assert torch.get_num_threads() == before


def test_graph_breaks_compile_subgraphs_and_fullgraph_raises():
    def fn(x):
        y = torch.sin(x) * 2
        print("graph break")  # noqa: T201 - a deliberate break
        return torch.cos(y) + 1

    x = torch.randn(16, device="neuron")
    expected = fn(x).cpu()
    assert torch.equal(torch.compile(fn, backend="neuron", options=BITWISE)(x).cpu(), expected)
    metrics = openneuron.compile_metrics()
    assert metrics["graphs"] == 2
    assert sum(metrics["graph_breaks"].values()) >= 1
    assert any("`print`" in reason for reason in metrics["graph_breaks"])  # names the cause
    torch._dynamo.reset()
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch.compile(fn, backend="neuron", fullgraph=True, options=BITWISE)(x)


def test_autocast_and_mixed_mode():
    model, x = block_and_input()

    def step(fn):
        with torch.autocast("neuron", dtype=torch.bfloat16):
            h = fn(x)
        return (h.float() * 3).sum()  # eager code after the compiled region

    expected = step(model).cpu()
    assert torch.equal(
        step(torch.compile(model, backend="neuron", options=BITWISE)).cpu(), expected
    )


@pytest.fixture
def our_caches_only():
    """AOTAutograd's persistent cache off, so a second compile reaches ours (test_compile_warm.py
    covers that cache)."""
    with torch._functorch.config.patch(enable_autograd_cache=False):
        yield


def test_in_memory_and_disk_caches(tmp_path, our_caches_only):
    model, x = block_and_input()
    with torch.no_grad():
        first = torch.compile(model, backend="neuron", options=BITWISE)(x).cpu()
        torch._dynamo.reset()
        torch.compile(model, backend="neuron", options=BITWISE)(x)
        assert openneuron.compile_metrics()["cache_hits_memory"] == 1
        entries = list((tmp_path / "cache").glob("*.ir"))
        assert len(entries) == 1
        torch._dynamo.reset()
        cache.clear_memory()
        again = torch.compile(model, backend="neuron", options=BITWISE)(x).cpu()
    assert openneuron.compile_metrics()["cache_hits_disk"] == 1
    assert torch.equal(first, again)
    text = entries[0].read_text()
    assert text.startswith(cache.FORMAT) and "graph(" in text  # data, not code


def corrupt_and_recompile(tmp_path, damage):
    model, x = block_and_input()
    with torch.no_grad():
        expected = torch.compile(model, backend="neuron", options=BITWISE)(x).cpu()
        (entry,) = (tmp_path / "cache").glob("*.ir")
        damage(entry)
        torch._dynamo.reset()
        cache.clear_memory()
        openneuron.reset_compile_metrics()
        with pytest.warns(RuntimeWarning, match="compile cache"):
            got = torch.compile(model, backend="neuron", options=BITWISE)(x).cpu()
    assert torch.equal(got, expected)
    assert openneuron.compile_metrics()["cache_errors"] == 1
    assert openneuron.compile_metrics()["cache_hits_disk"] == 0
    return entry


def test_truncated_cache_entry_is_reported_and_recompiled(tmp_path, our_caches_only):
    corrupt_and_recompile(
        tmp_path, lambda p: p.write_text(p.read_text()[: len(p.read_text()) // 2])
    )


def test_corrupted_cache_entry_is_reported_and_recompiled(tmp_path, our_caches_only):
    def flip(p):
        text = p.read_text()
        p.write_text(text.replace("pointwise", "pointwize", 1))

    corrupt_and_recompile(tmp_path, flip)


def test_stale_cache_entry_is_reported_and_recompiled(tmp_path, our_caches_only):
    corrupt_and_recompile(
        tmp_path, lambda p: p.write_text(p.read_text().replace("torch ", "torch 0.0-", 1))
    )


def test_an_entry_another_build_stored_is_never_read(tmp_path, our_caches_only, monkeypatch):
    """A program optimised by another build of the backend (other passes, same IR and options)
    lives under another key: this build compiles its own instead of running that one."""
    model, x = block_and_input()
    with torch.no_grad():
        with monkeypatch.context() as another_build:  # only this patch is undone after it
            another_build.setattr(cache, "build_identity", lambda: "another build")
            expected = torch.compile(model, backend="neuron", options=BITWISE)(x).cpu()
        (stored,) = (tmp_path / "cache").glob("*.ir")
        stored.write_text(stored.read_text().replace("pointwise", "pointwize", 1))
        torch._dynamo.reset()
        cache.clear_memory()
        openneuron.reset_compile_metrics()
        got = torch.compile(model, backend="neuron", options=BITWISE)(x).cpu()
    assert torch.equal(got, expected)
    metrics = openneuron.compile_metrics()
    assert metrics["graphs"] >= 1
    assert metrics["cache_hits_disk"] == 0 and metrics["cache_errors"] == 0
    assert len(list((tmp_path / "cache").glob("*.ir"))) == 2


def test_garbage_cache_entry_is_reported_and_recompiled(tmp_path, our_caches_only):
    corrupt_and_recompile(tmp_path, lambda p: p.write_bytes(b"\x00\xff" * 100))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_cache_directory_degrades_to_memory(tmp_path):
    directory = tmp_path / "cache"
    directory.mkdir()
    directory.chmod(0o500)
    model, x = block_and_input()
    with torch.no_grad(), pytest.warns(RuntimeWarning, match="memory only"):
        out = torch.compile(model, backend="neuron", options=BITWISE)(x)
    assert out.device.type == "neuron"


def test_refused_cache_write_degrades_to_memory(tmp_path, monkeypatch, our_caches_only):
    """What a read-only directory does to a user without root, for any user: the cache's write
    (a temporary file in the directory, then a rename) is refused."""
    import tempfile

    directory = tmp_path / "cache"
    real = tempfile.NamedTemporaryFile

    def refuse(*args, **kwargs):
        if kwargs.get("dir") == directory:
            raise PermissionError(13, "Permission denied", str(directory))
        return real(*args, **kwargs)

    monkeypatch.setattr(cache.tempfile, "NamedTemporaryFile", refuse)
    model, x = block_and_input()
    with torch.no_grad():
        expected = model(x).cpu()
        with pytest.warns(RuntimeWarning, match="memory only"):
            out = torch.compile(model, backend="neuron", options=BITWISE)(x).cpu()
        assert torch.equal(out, expected)
        assert not list(directory.glob("*"))
        torch._dynamo.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # reported once, not on every graph
            again = torch.compile(model, backend="neuron", options=BITWISE)(x).cpu()
    assert torch.equal(again, expected)
    assert openneuron.compile_metrics()["cache_hits_memory"] == 1


def test_unwritable_cache_path_degrades_to_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("OPENNEURON_CACHE_DIR", str(blocker / "cache"))
    model, x = block_and_input()
    with torch.no_grad(), pytest.warns(RuntimeWarning, match="memory only"):
        out = torch.compile(model, backend="neuron", options=BITWISE)(x).cpu()
    with torch.no_grad():
        assert torch.equal(out, model(x).cpu())


def test_options_and_modes():
    model, x = block_and_input()
    with torch.no_grad():
        expected = model(x).cpu()
        with pytest.warns(RuntimeWarning, match="unknown option 'triton.cudagraphs'"):
            out = torch.compile(
                model, backend="neuron", options={**BITWISE, "triton.cudagraphs": True}
            )(x)
        assert torch.equal(out.cpu(), expected)
        torch._dynamo.reset()
        openneuron.reset_compile_metrics()
        unfused = torch.compile(model, backend="neuron", options={**BITWISE, "fuse": False})(
            x
        ).cpu()
        metrics = openneuron.compile_metrics()
        assert metrics["fused_kernels"] == metrics["fused_ops"]  # one op per kernel
        assert torch.equal(unfused, expected)
        torch._dynamo.reset()
        out = torch.compile(model, backend="neuron", mode="max-autotune")(x)
        torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-4)  # default mode


def test_cache_option_off_writes_no_entry(tmp_path):
    model, x = block_and_input()
    with torch.no_grad():
        out = torch.compile(model, backend="neuron", options={**BITWISE, "cache": False})(x).cpu()
        assert torch.equal(out, model(x).cpu())
    assert openneuron.compile_metrics()["graphs"] == 1
    assert not list((tmp_path / "cache").glob("*.ir"))


def test_unknown_mode_raises_naming_it():
    model, x = block_and_input()
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed, match="unknown mode 'fastest'"):
        torch.compile(model, backend="neuron", mode="fastest")(x)


def test_unknown_option_is_warned_about_once():
    model, x = block_and_input()
    options = {"fuse": True, "epilogue_fusion": True}
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = torch.compile(model, backend="neuron", options=options)(x).cpu()
        torch._dynamo.reset()
        second = torch.compile(model, backend="neuron", options=options)(x).cpu()
    assert torch.equal(first, second)
    unknown = [w for w in caught if "unknown option" in str(w.message)]
    assert len(unknown) == 1
    assert "'epilogue_fusion'" in str(unknown[0].message)
    metrics = openneuron.compile_metrics()  # the second compile loads the first's graph
    assert metrics["graphs"] == 1 and metrics["cache_hits_aot"] == 1


def complex_rotary(x, freqs):
    """Rotary embedding in complex arithmetic (as in Meta's Llama reference): the IR has no
    complex dtype, so the lowering refuses these graphs."""
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(pairs * freqs).flatten(-2).type_as(x)


def test_a_graph_the_lowering_cannot_express_runs_uncompiled_warned_once():
    torch.manual_seed(0)
    x = torch.randn(2, 8, 16, device="neuron", requires_grad=True)
    angles = torch.outer(torch.arange(8.0), torch.rand(8))
    freqs = torch.polar(torch.ones_like(angles), angles).to("neuron")

    def run(fn):
        x.grad = None
        y = fn(x, freqs)
        (y * y).sum().backward()
        return [y.detach().cpu(), x.grad.cpu()]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex multiplication runs on the host fallback
        expected = run(complex_rotary)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = run(torch.compile(complex_rotary, backend="neuron", options=BITWISE))
    assert_bitwise(expected, got)
    uncompiled = [w for w in caught if "runs uncompiled" in str(w.message)]
    assert len(uncompiled) == 1  # forward and backward fail alike: one warning
    assert "complex64" in str(uncompiled[0].message)
    metrics = openneuron.compile_metrics()
    assert metrics["lowering_fallbacks"] == {
        "tensors of dtype torch.complex64 are not expressible": 2
    }
    assert metrics["graphs"] == 0


def test_debug_dir_dumps_each_stage(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENNEURON_DEBUG_DIR", str(tmp_path / "debug"))
    model, x = block_and_input()
    forward_and_grads(torch.compile(model, backend="neuron", options=BITWISE), model, x)
    graphs = sorted((tmp_path / "debug").iterdir())
    assert [g.name.split("_")[-1] for g in graphs] == ["forward", "backward"]
    names = sorted(p.name for p in graphs[0].iterdir())
    assert "fx_graph.txt" in names and "kernels.txt" in names
    assert "ir_00_input.txt" in names and "ir_07_fuse_elementwise.txt" in names
    assert "= fused" in (graphs[0] / "ir_10_plan_memory.txt").read_text()
    assert "Gelu" in (graphs[0] / "kernels.txt").read_text()
    # The forward returns the linear layer's product for the backward; the backward fuses the
    # gelu gradient into the product of the incoming gradient and the weight.
    assert "= gemm_epilogue" in (graphs[1] / "ir_08_fuse_gemm_epilogue.txt").read_text()
    assert "= mm (alpha 1, beta 0)" in (graphs[1] / "kernels.txt").read_text()


def test_errors_name_the_graph_node_and_source_line():
    def fn(x):
        return x.expand(2**16, 2**17) * 2  # a 32 GiB result: more than the device holds

    x = torch.randn(1, 2**17, device="neuron")
    with pytest.raises(torch.OutOfMemoryError) as info:
        torch.compile(fn, backend="neuron", options=BITWISE)(x)
    text = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    assert "graph node" in text and "fused" in text and "test_compile.py" in text
    assert torch.ones(2, device="neuron").sum().item() == 2  # the process stays usable


def test_extern_errors_name_the_graph_node_and_source_line():
    def fn(x, index):
        return torch.index_select(x * 2, 0, index) + 1  # an ATen call in the program

    line = fn.__code__.co_firstlineno + 1
    x = torch.randn(10, 4, device="neuron")
    with pytest.raises(IndexError, match="out of bounds") as info:
        torch.compile(fn, backend="neuron", options=BITWISE)(
            x, torch.tensor([1, 100], device="neuron")
        )
    text = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    assert "(aten::index_select)" in text and f"test_compile.py:{line}" in text
    assert "graph node" in text
    torch._dynamo.reset()
    index = torch.tensor([1, 9], device="neuron")
    assert torch.equal(
        torch.compile(fn, backend="neuron", options=BITWISE)(x, index).cpu(), fn(x, index).cpu()
    )


def test_a_wrong_stride_kernel_is_repaired_and_counted():
    """The layout-repair counter has teeth: a cumsum kernel that returns its result column-major
    (its meta kernel promises row-major) is copied into the promised layout and counted."""

    def fn(x):
        return torch.cumsum(x, 1) * 2

    x = torch.randn(6, 5, device="neuron")
    expected = fn(x).cpu()

    def column_major_cumsum(t, dim, dtype=None):
        result = torch.ops.aten.cumsum.default(t.cpu(), dim, dtype=dtype)
        return result.t().contiguous().t().to(t.device)

    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
        library.impl("cumsum", column_major_cumsum, "PrivateUse1")
    try:
        got = torch.compile(fn, backend="neuron", options=BITWISE)(x).cpu()
    finally:
        del library
    assert torch.equal(got, expected)
    assert openneuron.compile_metrics()["layout_repairs"] == 1


def test_an_op_without_a_native_kernel_runs_counted_inside_the_program():
    def fn(x):
        # float64 is not a NeuronCore type: the host fallback runs kthvalue on it.
        return torch.kthvalue(x, 3).values * 2

    x = torch.rand(32, dtype=torch.float64, device="neuron")
    openneuron.clear_op_tracking()
    out = torch.compile(fn, backend="neuron", options=BITWISE)(x)
    assert torch.equal(out.cpu(), fn(x).cpu())
    assert any("kthvalue" in name for name in openneuron.get_fallback_ops())


def test_random_programs_fixed_seed():
    """A fixed slice of the differential fuzzer (the soak: python -m tests.compile_fuzz)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert fuzz(graphs=40, seed=20261201) == []


def test_random_programs_fixed_seed_bitwise():
    """The same slice compiled with options={"bitwise": True}: forward results equal eager's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert fuzz(graphs=40, seed=20261201, bitwise=True) == []


@pytest.mark.parametrize("bitwise", [False, True])
def test_the_fuzzer_catches_a_subtly_wrong_fused_kernel(bitwise):
    """Every fused matrix product scaled by 1.001 (a test-only fault): the fuzzer's rule, float64
    arbiter or bit equality, must report graphs of the same slice."""
    with compile_fault("wrong_scale"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(fuzz(graphs=40, seed=20261201, bitwise=bitwise)) >= 2


def test_readme_documents_every_option():
    """The README's table of options lists exactly the keys the backend honours."""
    import re

    from openneuron.compile import KNOWN_OPTIONS

    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    section = readme.split("## Compiling a model", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE))
    assert documented == set(KNOWN_OPTIONS)
