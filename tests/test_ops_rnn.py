"""Recurrent cells on neuron vs PyTorch CPU: nn.LSTM, nn.GRU, nn.LSTMCell, nn.GRUCell and the
fused cell ops behind them (_thnn_fused_lstm_cell / _thnn_fused_gru_cell and backwards), plus
batch norm's running statistics at float64 (host fallback write-back).

Every case compares the forward result and the gradients of the input, the initial state and
every parameter against CPU. fp32/bf16/fp16 must run natively (no host fallback at all);
float64 runs on the host by design and is compared at float64 precision.
"""

import warnings

import pytest
import torch

import openneuron

# Tolerances per dtype, with the reason:
# float32: the same fp32 math as CPU but different matmul blocking and fused gate arithmetic
#          (sum order of the two gate products and biases) -> a few ulp, amplified slightly by
#          the recurrence over time steps.
# float64: host computation in float64 composed of CPU ops; differs from CPU's LSTM autograd
#          only in the association order of a few additions.
# bfloat16 / float16: compared with CPU computing in float32 from the same 16-bit values:
#          neuron rounds every op's result once to 16 bits (gate matmuls, cell outputs,
#          gradients), which over two layers and several time steps accumulates a few
#          roundings of 2^-8 (bf16) / 2^-11 (fp16) relative.
TOL = {
    torch.float32: dict(atol=2e-5, rtol=2e-5),
    torch.float64: dict(atol=1e-10, rtol=1e-10),
    torch.bfloat16: dict(atol=4e-2, rtol=4e-2),
    torch.float16: dict(atol=5e-3, rtol=5e-3),
}
DEVICE = "neuron"

CELL_OPS = (
    "aten::_thnn_fused_lstm_cell",
    "aten::_thnn_fused_lstm_cell_backward_impl",
    "aten::_thnn_fused_gru_cell",
    "aten::_thnn_fused_gru_cell_backward",
)


def _modules():
    # (name, constructor, input shape, initial state shapes (None: module default))
    return {
        "lstm": (lambda: torch.nn.LSTM(5, 6, num_layers=2), (4, 3, 5), None),
        "lstm_bidir_batch_first": (
            lambda: torch.nn.LSTM(5, 6, bidirectional=True, batch_first=True),
            (3, 4, 5),
            None,
        ),
        "lstm_proj_no_bias": (
            lambda: torch.nn.LSTM(5, 6, proj_size=3, bias=False),
            (4, 2, 5),
            None,
        ),
        "gru": (lambda: torch.nn.GRU(5, 6, num_layers=2), (4, 3, 5), None),
        "gru_bidir_no_bias": (
            lambda: torch.nn.GRU(5, 6, bidirectional=True, bias=False),
            (3, 2, 5),
            None,
        ),
        "lstm_unbatched": (lambda: torch.nn.LSTM(5, 6), (4, 5), None),
        "lstm_cell": (lambda: torch.nn.LSTMCell(5, 6), (3, 5), [(3, 6), (3, 6)]),
        "lstm_cell_unbatched": (lambda: torch.nn.LSTMCell(5, 6), (5,), None),
        "gru_cell": (lambda: torch.nn.GRUCell(5, 6), (3, 5), [(3, 6)]),
        "gru_cell_no_bias": (lambda: torch.nn.GRUCell(5, 6, bias=False), (3, 5), None),
    }


MODULES = _modules()


def _run(module, x, states, cotangent_seed=1):
    """Forward, then gradients of input, states and parameters for seeded cotangents."""
    if states is None:
        out = module(x)
    elif isinstance(module, torch.nn.LSTMCell):
        out = module(x, tuple(states))
    else:
        out = module(x, *states)
    flat = []

    def collect(value):
        if isinstance(value, torch.Tensor):
            flat.append(value)
        elif isinstance(value, (tuple, list)):
            for v in value:
                collect(v)

    collect(out)
    generator = torch.Generator().manual_seed(cotangent_seed)
    cotangents = [
        torch.randn(o.shape, generator=generator, dtype=torch.float64).to(o.device, o.dtype)
        for o in flat
    ]
    leaves = [x] + list(states or []) + list(module.parameters())
    grads = torch.autograd.grad(flat, leaves, cotangents, allow_unused=True)
    return flat, grads


def _make(name, dtype, device, compute_dtype=None):
    ctor, shape, state_shapes = MODULES[name]
    torch.manual_seed(0)
    module = ctor().to(dtype)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)
    states = (
        [torch.randn(s, generator=generator, dtype=torch.float64).to(dtype) for s in state_shapes]
        if state_shapes
        else None
    )
    target = compute_dtype or dtype
    module = module.to(device=device, dtype=target)
    x = x.to(device=device, dtype=target).requires_grad_()
    if states is not None:
        states = [s.to(device=device, dtype=target).requires_grad_() for s in states]
    return module, x, states


def _assert_close_all(got, want, tol, what):
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        if w is None:
            assert g is None, f"{what}[{i}]: CPU gave no gradient"
            continue
        assert g is not None, f"{what}[{i}]: neuron gave no gradient"
        assert g.device.type == DEVICE, f"{what}[{i}] on {g.device}"
        torch.testing.assert_close(g.cpu().to(w.dtype), w, **tol, msg=lambda m: f"{what}[{i}]: {m}")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_float32_modules_match_cpu_natively(name):
    cpu_module, cpu_x, cpu_states = _make(name, torch.float32, "cpu")
    dev_module, dev_x, dev_states = _make(name, torch.float32, DEVICE)
    want_out, want_grads = _run(cpu_module, cpu_x, cpu_states)
    openneuron.clear_op_tracking()
    got_out, got_grads = _run(dev_module, dev_x, dev_states)
    assert openneuron.get_fallback_ops() == {}
    executed = openneuron.get_executed_ops()
    assert any(op in executed for op in CELL_OPS), executed
    _assert_close_all(got_out, want_out, TOL[torch.float32], "output")
    _assert_close_all(got_grads, want_grads, TOL[torch.float32], "grad")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", ["lstm", "gru", "lstm_cell", "gru_cell", "lstm_bidir_batch_first"])
def test_16bit_modules_match_fp32_cpu_natively(name, dtype):
    # Reference: CPU in float32 from the same 16-bit weights and inputs.
    cpu_module, cpu_x, cpu_states = _make(name, dtype, "cpu", compute_dtype=torch.float32)
    dev_module, dev_x, dev_states = _make(name, dtype, DEVICE)
    want_out, want_grads = _run(cpu_module, cpu_x, cpu_states)
    openneuron.clear_op_tracking()
    got_out, got_grads = _run(dev_module, dev_x, dev_states)
    assert openneuron.get_fallback_ops() == {}
    for g in got_out:
        assert g.dtype == dtype
    _assert_close_all(got_out, want_out, TOL[dtype], "output")
    _assert_close_all(got_grads, want_grads, TOL[dtype], "grad")


@pytest.mark.parametrize(
    "name", ["lstm", "gru_bidir_no_bias", "lstm_cell", "gru_cell", "lstm_proj_no_bias"]
)
def test_float64_modules_run_on_host_and_match_cpu(name):
    cpu_module, cpu_x, cpu_states = _make(name, torch.float64, "cpu")
    dev_module, dev_x, dev_states = _make(name, torch.float64, DEVICE)
    want_out, want_grads = _run(cpu_module, cpu_x, cpu_states)
    openneuron.clear_op_tracking()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got_out, got_grads = _run(dev_module, dev_x, dev_states)
    fallbacks = openneuron.get_fallback_ops()
    assert any(op in fallbacks for op in CELL_OPS), fallbacks  # visibly on the host
    _assert_close_all(got_out, want_out, TOL[torch.float64], "output")
    _assert_close_all(got_grads, want_grads, TOL[torch.float64], "grad")


def test_float64_cell_refused_in_strict_mode():
    gates = torch.randn(2, 6, dtype=torch.float64, device=DEVICE)
    hx = torch.randn(2, 2, dtype=torch.float64, device=DEVICE)
    with openneuron.strict(), pytest.raises(NotImplementedError, match="_thnn_fused_gru_cell"):
        torch.ops.aten._thnn_fused_gru_cell(gates, gates, hx)


@pytest.mark.parametrize("name", ["lstm", "gru_cell"])
def test_double_backward_uses_differentiable_cells(name):
    # create_graph=True takes ATen's differentiable composite backward (built of native ops).
    def grad_norm(device):
        module, x, states = _make(name, torch.float32, device)
        out = module(x) if states is None else module(x, *states)
        first = out[0] if isinstance(out, tuple) else out
        (g,) = torch.autograd.grad(first.sum(), x, create_graph=True)
        (gg,) = torch.autograd.grad((g * g).sum(), x)
        return g.detach().cpu(), gg.cpu()

    want_g, want_gg = grad_norm("cpu")
    got_g, got_gg = grad_norm(DEVICE)
    torch.testing.assert_close(got_g, want_g, **TOL[torch.float32])
    torch.testing.assert_close(got_gg, want_gg, atol=1e-4, rtol=1e-4)


# ----------------------------------------------------------------------------- the ops directly


def _lstm_reference(ig, hg, cx, bi, bh):
    gates = ig.double() + hg.double()
    if bi is not None:
        gates = gates + bi.double() + bh.double()
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx.double() + i * g
    return o * cy.tanh(), cy


def _gru_reference(ig, hg, hx, bi, bh):
    ig, hg = ig.double(), hg.double()
    if bi is not None:
        ig, hg = ig + bi.double(), hg + bh.double()
    ir, iz, in_ = ig.chunk(3, 1)
    hr, hz, hn = hg.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return n + z * (hx.double() - n)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("noncontiguous", [False, True])
def test_fused_lstm_cell_forward_and_backward(dtype, bias, noncontiguous):
    generator = torch.Generator().manual_seed(3)
    B, H = 5, 7

    def rand(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)

    ig, hg, cx = rand(B, 4 * H), rand(B, 4 * H), rand(B, H)
    if noncontiguous:
        ig = rand(4 * H, B).t()  # transposed gates
        cx = rand(B, 2 * H)[:, ::2]
    bi, bh = (rand(4 * H), rand(4 * H)) if bias else (None, None)
    leaves = [t.to(DEVICE).requires_grad_() for t in (ig, hg, cx)]
    dev_bias = [t.to(DEVICE).requires_grad_() for t in (bi, bh)] if bias else [None, None]
    openneuron.clear_op_tracking()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hy, cy, workspace = torch.ops.aten._thnn_fused_lstm_cell(*leaves, *dev_bias)
    if dtype != torch.float64:
        assert openneuron.get_fallback_ops() == {}
    assert hy.dtype == dtype and cy.dtype == dtype and hy.shape == (B, H)
    want_hy, want_cy = _lstm_reference(ig, hg, cx, bi, bh)
    tol = {torch.float32: dict(atol=1e-6, rtol=1e-5)}.get(dtype, TOL[dtype])
    torch.testing.assert_close(hy.cpu().double(), want_hy, **tol)
    torch.testing.assert_close(cy.cpu().double(), want_cy, **tol)

    # Gradients vs autograd of the float64 reference composite (grad_cy too).
    g = torch.Generator().manual_seed(4)
    ghy = torch.randn(B, H, generator=g, dtype=torch.float64)
    gcy = torch.randn(B, H, generator=g, dtype=torch.float64)
    grads = torch.autograd.grad(
        [hy, cy],
        leaves + [b for b in dev_bias if b is not None],
        [ghy.to(DEVICE, dtype), gcy.to(DEVICE, dtype)],
    )
    ref_leaves = [t.double().requires_grad_() for t in (ig, hg, cx)]
    ref_bias = [t.double().requires_grad_() for t in (bi, bh)] if bias else [None, None]
    r_hy, r_cy = _lstm_reference(*ref_leaves, *ref_bias)
    want = torch.autograd.grad(
        [r_hy, r_cy],
        ref_leaves + [b for b in ref_bias if b is not None],
        [ghy.to(dtype).double(), gcy.to(dtype).double()],
    )
    for got, exp in zip(grads, want):
        assert got.dtype == dtype
        torch.testing.assert_close(got.cpu().double(), exp, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("bias", [True, False])
def test_fused_gru_cell_forward_and_backward(dtype, bias):
    generator = torch.Generator().manual_seed(5)
    B, H = 4, 6

    def rand(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)

    ig, hg, hx = rand(B, 3 * H), rand(3 * H, B).t(), rand(B, H)  # hidden gates transposed
    bi, bh = (rand(3 * H), rand(3 * H)) if bias else (None, None)
    leaves = [t.to(DEVICE).requires_grad_() for t in (ig, hg, hx)]
    dev_bias = [t.to(DEVICE).requires_grad_() for t in (bi, bh)] if bias else [None, None]
    openneuron.clear_op_tracking()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hy, workspace = torch.ops.aten._thnn_fused_gru_cell(*leaves, *dev_bias)
    if dtype != torch.float64:
        assert openneuron.get_fallback_ops() == {}
    tol = {torch.float32: dict(atol=1e-6, rtol=1e-5)}.get(dtype, TOL[dtype])
    torch.testing.assert_close(hy.cpu().double(), _gru_reference(ig, hg, hx, bi, bh), **tol)
    ghy = torch.randn(B, H, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    grads = torch.autograd.grad(
        hy, leaves + [b for b in dev_bias if b is not None], ghy.to(DEVICE, dtype)
    )
    ref_leaves = [t.double().requires_grad_() for t in (ig, hg, hx)]
    ref_bias = [t.double().requires_grad_() for t in (bi, bh)] if bias else [None, None]
    want = torch.autograd.grad(
        _gru_reference(*ref_leaves, *ref_bias),
        ref_leaves + [b for b in ref_bias if b is not None],
        ghy.to(dtype).double(),
    )
    for got, exp in zip(grads, want):
        assert got.dtype == dtype
        torch.testing.assert_close(got.cpu().double(), exp, **tol)


def test_lstm_backward_without_incoming_gradients_and_with_cy_only():
    ig = torch.randn(2, 8, device=DEVICE)
    hg = torch.randn(2, 8, device=DEVICE)
    cx = torch.randn(2, 2, device=DEVICE)
    _, cy, ws = torch.ops.aten._thnn_fused_lstm_cell(ig, hg, cx)
    none = torch.ops.aten._thnn_fused_lstm_cell_backward_impl(None, None, cx, cy, ws, True)
    assert all(t is None for t in none)
    gcy = torch.randn(2, 2, device=DEVICE)
    grad_gates, grad_cx, grad_bias = torch.ops.aten._thnn_fused_lstm_cell_backward_impl(
        None, gcy, cx, cy, ws, True
    )
    i, f, g, _ = ws.cpu().chunk(4, 1)
    torch.testing.assert_close(grad_cx.cpu(), gcy.cpu() * f)
    torch.testing.assert_close(grad_gates.cpu()[:, 6:], torch.zeros(2, 2))  # output gate
    torch.testing.assert_close(grad_bias.cpu(), grad_gates.cpu().sum(0))


def test_empty_batch():
    ig = torch.randn(0, 12, device=DEVICE)
    hy, cy, ws = torch.ops.aten._thnn_fused_lstm_cell(
        ig, ig.clone(), torch.randn(0, 3, device=DEVICE)
    )
    assert hy.shape == (0, 3) and cy.shape == (0, 3)
    hy, ws = torch.ops.aten._thnn_fused_gru_cell(
        ig[:, :9], ig[:, :9].clone(), torch.randn(0, 3, device=DEVICE)
    )
    assert hy.shape == (0, 3)


def test_bad_arguments_fail_like_pytorch():
    ig = torch.randn(2, 8, device=DEVICE)
    with pytest.raises(RuntimeError, match="same size"):
        torch.ops.aten._thnn_fused_lstm_cell(
            ig, torch.randn(2, 4, device=DEVICE), torch.randn(2, 2, device=DEVICE)
        )
    with pytest.raises(RuntimeError, match="elements"):
        torch.ops.aten._thnn_fused_lstm_cell(ig, ig, torch.randn(2, 3, device=DEVICE))
    with pytest.raises(RuntimeError, match="same device"):
        torch.ops.aten._thnn_fused_lstm_cell(ig, ig, torch.randn(2, 2))
    with pytest.raises(RuntimeError, match="2-dimensional"):
        torch.ops.aten._thnn_fused_gru_cell(ig[0], ig[0], torch.randn(2, device=DEVICE))


# ----------------------------------------------------------------------------- batch norm float64


@pytest.mark.parametrize(
    "ctor,shape",
    [
        (lambda: torch.nn.BatchNorm1d(4), (6, 4)),
        (lambda: torch.nn.BatchNorm2d(3, momentum=None), (2, 3, 4, 4)),
        (lambda: torch.nn.BatchNorm3d(3, affine=False), (2, 3, 2, 3, 2)),
        (lambda: torch.nn.InstanceNorm1d(3, track_running_stats=True), (2, 3, 5)),
        (lambda: torch.nn.InstanceNorm2d(3, affine=True, track_running_stats=True), (2, 3, 4, 4)),
    ],
)
def test_float64_batch_norm_updates_running_stats(ctor, shape):
    # native_batch_norm updates running_mean/var in place though its schema does not mark them
    # mutable; the host fallback must copy them back.
    torch.manual_seed(0)
    cpu_module = ctor().double().train()
    dev_module = ctor().double().train().to(DEVICE)
    dev_module.load_state_dict(cpu_module.state_dict())
    for _step in range(2):
        x = torch.randn(shape, dtype=torch.float64)
        want = cpu_module(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = dev_module(x.to(DEVICE))
        torch.testing.assert_close(got.cpu(), want, **TOL[torch.float64])
    for (name, b_dev), (_, b_cpu) in zip(dev_module.named_buffers(), cpu_module.named_buffers()):
        assert b_dev.device.type == DEVICE
        torch.testing.assert_close(b_dev.cpu(), b_cpu, **TOL[torch.float64], msg=name)


def test_float64_native_batch_norm_direct_call_writes_back():
    x = torch.randn(5, 3, dtype=torch.float64)
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    drm, drv = rm.to(DEVICE), rv.to(DEVICE)
    torch.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.native_batch_norm(x.to(DEVICE), None, None, drm, drv, True, 0.1, 1e-5)
    torch.testing.assert_close(drm.cpu(), rm)
    torch.testing.assert_close(drv.cpu(), rv)
    # Evaluation mode leaves them alone.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.native_batch_norm(x.to(DEVICE), None, None, drm, drv, False, 0.1, 1e-5)
    torch.testing.assert_close(drm.cpu(), rm)
