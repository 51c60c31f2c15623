"""Regression tests for bugs PyTorch's upstream device-generic test files found on neuron
(test_tensor_creation_ops, test_reductions, test_indexing, test_nn, test_torch), each against
PyTorch on the CPU."""

import re

import pytest
import torch

import openneuron  # noqa: F401  (registers the device)

DEV = "neuron"


def _raises_as_cpu(fn):
    """fn("cpu") and fn("neuron") raise the same exception type with the same message."""
    with pytest.raises(Exception) as cpu_error:
        fn("cpu")
    with pytest.raises(type(cpu_error.value), match=re.escape(str(cpu_error.value))):
        fn(DEV)


# ---- arange / linspace into an out= of another shape --------------------------------------


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.int16])
@pytest.mark.parametrize("fill", ["arange", "linspace"])
@pytest.mark.parametrize("layout", ["permuted", "narrowed"])
def test_range_fill_of_multi_dim_out_is_row_major(layout, fill, dtype):
    # The kernels wrote along one stride, so a permuted or narrowed out= of the right size got
    # its values in memory order (or in the wrong places); the CPU fills row-major.
    def run(device):
        if layout == "permuted":
            out = torch.zeros(3, 3, 4, device=device, dtype=dtype).permute(2, 0, 1)
        else:
            out = torch.zeros(2, 3, device=device, dtype=dtype).narrow(1, 1, 2)
        n = out.numel()
        if fill == "arange":
            torch.arange(0, n, out=out)
        else:
            torch.linspace(0, n - 1, n, out=out)
        return out

    actual, expected = run(DEV), run("cpu")
    assert actual.shape == expected.shape and actual.stride() == expected.stride()
    torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=0)


@pytest.mark.parametrize(
    "make",
    [
        lambda d: torch.linspace(1, 10, 10, out=torch.zeros(1, device=d).expand(10)),
        lambda d: torch.arange(0, 10, out=torch.zeros(1, device=d).expand(10)),
        lambda d: torch.cat(
            [torch.ones(3, 3, device=d)] * 2, out=torch.zeros(1, 3, device=d).expand(6, 3)
        ),
    ],
    ids=["linspace", "arange", "cat"],
)
def test_out_writing_one_location_twice_is_refused(make):
    # An expanded out= was filled silently (each location written several times).
    _raises_as_cpu(make)


def test_cat_into_one_of_its_inputs_is_refused():
    def run(device):
        x = torch.ones(2, 3, device=device)
        return torch.cat([x[:1], x[1:]], out=x)

    _raises_as_cpu(run)


# ---- all / any ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.float32])
@pytest.mark.parametrize("op", [torch.all, torch.any])
@pytest.mark.parametrize("keepdim", [False, True])
def test_all_any_over_empty_dim_list_reduce_nothing(op, dtype, keepdim):
    # dim=[] reduced every dim on neuron (a 0-dim result); for all/any it reduces none.
    def run(device):
        x = torch.tensor([[0, 2, 1], [3, 0, 0]], device=device).to(dtype)
        return op(x, dim=[], keepdim=keepdim)

    actual, expected = run(DEV), run("cpu")
    assert actual.dtype == expected.dtype
    torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=0)


@pytest.mark.parametrize("op", [torch.all, torch.any])
def test_all_any_non_bool_out_message(op):
    _raises_as_cpu(lambda d: op(torch.ones(2, 3, device=d), dim=0, out=torch.empty(3, device=d)))


# ---- random draws: PyTorch's own argument checks --------------------------------------------


@pytest.mark.parametrize(
    "dtype, low, high",
    [
        (torch.int8, -200, 10),  # from below int8
        (torch.uint8, 0, 300),  # to - 1 above uint8
        (torch.int16, -5, 2**20),
        (torch.bool, 0, 3),
        (torch.int32, 5, 5),  # empty range
    ],
)
def test_random_from_to_out_of_dtype_range_raises(dtype, low, high):
    _raises_as_cpu(lambda d: torch.empty(10, dtype=dtype, device=d).random_(low, high))


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8])
def test_random_to_out_of_dtype_range_raises(dtype):
    _raises_as_cpu(lambda d: torch.empty(10, dtype=dtype, device=d).random_(1000))


def test_random_beyond_float_precision_warns_as_cpu():
    for device in ("cpu", DEV):
        t = torch.empty(10, dtype=torch.float32, device=device)
        with pytest.warns(UserWarning, match="from is out of bounds"):
            t.random_(-(2**25), 0)  # float32 is exact to 2^24


def test_uniform_range_wider_than_dtype_raises():
    big = torch.finfo(torch.float32).max
    _raises_as_cpu(lambda d: torch.empty(10, device=d).uniform_(-big, big))


def test_normal_negative_std_tensor_raises():
    _raises_as_cpu(lambda d: torch.normal(0.0, torch.tensor([1.0, -1.0], device=d)))


# ---- tensors of more than 64 dims ------------------------------------------------------------


def test_fill_and_random_of_65_dims_then_reduction_error_as_cpu():
    # Creating a 65-dim tensor failed on neuron ("at most 64 dimensions"); the CPU creates it
    # and only its reductions refuse it, with PyTorch's own message.
    shape = [1] * 63 + [2, 3]
    for device in ("cpu", DEV):
        x = torch.full(shape, 2.0, device=device)
        assert x.dim() == 65
        # (the CPU's elementwise ops refuse 65 dims too, so the values are checked flat)
        assert x.cpu().reshape(-1).tolist() == [2.0] * 6
        y = torch.randn(shape, device=device)
        assert y.shape == x.shape and len(set(y.cpu().reshape(-1).tolist())) == 6
    _raises_as_cpu(lambda d: torch.ones([1] * 65, device=d).sum(dim=0))


# ---- strides of an elementwise result ----------------------------------------------------------


def test_elementwise_result_keeps_cpu_strides_of_size_one_dims():
    # An input of shape (4, 3, 1) strides (2, 1, 2): the CPU's exp gives strides (3, 1, 3);
    # neuron gave (3, 1, 1) (contiguous), unlike empty_like of the same input.
    def run(device):
        x = torch.empty_strided((4, 3, 2), (2, 1, 1), device=device)[:, :, ::2].fill_(1.0)
        y = torch.ones(4, 3, 1, device=device)  # row-major: alone, it would give (3, 1, 1)
        return (torch.exp(x).stride(), torch.empty_like(x).stride(), (x + y).stride(),
                (y * x).stride(), (y + y).stride(), torch.neg(y).stride())

    assert run(DEV) == run("cpu")


# ---- indexing ------------------------------------------------------------------------------


def test_index_into_size_zero_dim_message():
    # The CPU names no index value for an index into a dim of size 0.
    _raises_as_cpu(lambda d: torch.empty(10, 0, device=d)[:, [0, 1]])


def test_arange_resizing_a_non_empty_out_warns():
    # A rounding error can make arange's length differ from out's; the CPU warns before resizing.
    for device in ("cpu", DEV):
        line = torch.zeros(1, 49, device=device)
        with pytest.warns(UserWarning, match="The out tensor will be resized"):
            torch.arange(-1, 1, 2.0 / 49, dtype=torch.float32, out=line)
        assert line.shape == (50,)


# ---- logspace into a self-overlapping out= ---------------------------------------------------


def test_logspace_into_an_expanded_out_raises_as_cpu():
    # logspace runs on the host fallback, which filled a host copy of an expanded out= and
    # copied it back, writing one location ten times; the CPU refuses such an out=
    # (test_linlogspace_mem_overlap).
    _raises_as_cpu(lambda d: torch.logspace(1, 10, 10, out=torch.rand(1, device=d).expand(10)))


def test_logspace_out_still_resizes_and_fills_as_cpu():
    for base in (10.0, 2.0):
        results = []
        for device in ("cpu", DEV):
            out = torch.empty(3, device=device, dtype=torch.float64)
            torch.logspace(-1, 2, 7, base=base, out=out)
            results.append(out.cpu())
        assert results[1].shape == (7,)
        torch.testing.assert_close(results[1], results[0], rtol=0, atol=0)


# ---- sparse COO tensors built from device tensors ------------------------------------------


@pytest.mark.parametrize("dtype", [None, torch.float64])
def test_sparse_coo_tensor_of_device_indices_and_values(dtype):
    # The constructor raised NotImplementedError (no SparsePrivateUse1 kernel); the tensor now
    # lives on the device with its parts, and matches the CPU's (test_tensor_ctor_device_inference).
    def build(device):
        indices = torch.tensor([[0, 1, 1], [2, 0, 1], [2, 1, 0]], device=device)
        values = torch.tensor((1, 2, 3), device=device)
        return torch.sparse_coo_tensor(indices, values, (3, 3, 3), dtype=dtype)

    on_device, on_cpu = build(DEV), build("cpu")
    assert on_device.device == torch.device(DEV, 0) and on_device.layout == torch.sparse_coo
    assert on_device.dtype == on_cpu.dtype
    assert (on_device.sparse_dim(), on_device._nnz()) == (on_cpu.sparse_dim(), on_cpu._nnz())
    assert on_device._indices().device == on_device._values().device == on_device.device
    assert torch.equal(on_device.cpu().to_dense(), on_cpu.to_dense())


# ---- in-place and out= activations into an expanded tensor ---------------------------------


@pytest.mark.parametrize(
    "write",
    [
        lambda x: torch.nn.functional.elu_(x),
        lambda x: torch.nn.functional.leaky_relu(x, inplace=True),
        lambda x: torch.nn.functional.silu(x, inplace=True),
        lambda x: torch.nn.functional.softplus(x, out=x),
        lambda x: torch.exp(x, out=x),
        lambda x: x.clamp_(min=0.0),
        lambda x: torch.nn.functional.softshrink(x, out=x),  # the host fallback at any dtype
    ],
    ids=["elu_", "leaky_relu_", "silu_", "softplus_out", "exp_out", "clamp_", "softshrink_out"],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])  # float64: the host fallback
def test_pointwise_write_into_an_expanded_tensor_raises_as_cpu(write, dtype):
    # The pointwise kernel wrote each of the 6 locations 6 times; the CPU's TensorIterator
    # refuses a written tensor with internal overlap (test_*_inplace_overlap in test_nn.py).
    _raises_as_cpu(lambda d: write(torch.randn(1, 6, device=d, dtype=dtype).expand(6, 6)))


def test_threshold_of_an_expanded_tensor_still_runs_as_cpu():
    # The CPU's threshold_ allows an expanded self (it is idempotent); it reaches the host
    # fallback as threshold.out with out=self, which the overlap check leaves alone.
    results = []
    for device in ("cpu", DEV):
        x = torch.tensor([[0.2, 0.7, -1.0]], device=device).expand(2, 3)
        torch.threshold_(x, 0.5, 0.5)
        results.append(x.cpu())
    assert torch.equal(results[0], results[1])


def test_masked_fill_of_an_expanded_tensor_still_runs_as_cpu():
    # The CPU's masked_fill_ runs on an expanded tensor, so it is left out of the check.
    results = []
    for device in ("cpu", DEV):
        x = torch.zeros(1, 4, device=device).expand(3, 4)
        x.masked_fill_(torch.tensor([True, False, True, False], device=device), 2.0)
        results.append(x.cpu())
    assert torch.equal(results[0], results[1])


# ---- group_norm over very large groups ---------------------------------------------------------


def test_group_norm_over_a_large_group_is_within_float32_error():
    # One float sum over a whole group of 2^23 values lost the mean (GroupNorm over
    # 8x256x256x72 was 0.02 off; test_GroupNorm_numeric); the CPU stays within 3e-7 here.
    torch.manual_seed(0)
    x = torch.rand(1, 4, 2**22)
    exact = torch.nn.functional.group_norm(x.double(), 2)
    cpu_error = (torch.nn.functional.group_norm(x, 2).double() - exact).abs().max().item()
    ours = torch.nn.functional.group_norm(x.to(DEV), 2).cpu().double()
    # The bound: a few float32 ulps of the largest |output| (1.73), as the CPU's error.
    assert (ours - exact).abs().max().item() <= max(4 * cpu_error, 1e-6)


def test_batch_norm_backward_over_a_large_channel_is_within_float32_error():
    # batch_norm's backward summed grad_out over a whole channel in one float as well.
    torch.manual_seed(0)
    x = torch.rand(1, 2, 2**22)
    grad = torch.rand(1, 2, 2**22)
    weight = torch.ones(2)

    def grads(device, dtype):
        xi = x.to(device, dtype).clone().requires_grad_()
        w = weight.to(device, dtype).clone().requires_grad_()
        torch.nn.functional.batch_norm(xi, None, None, w, training=True).backward(
            grad.to(device, dtype)
        )
        return w.grad.cpu().double()

    exact, cpu = grads("cpu", torch.float64), grads("cpu", torch.float32)
    ours = grads(DEV, torch.float32)
    cpu_error = (cpu - exact).abs().max().item()
    assert (ours - exact).abs().max().item() <= max(4 * cpu_error, 1e-3)


# ---- deterministic mode fills new memory ---------------------------------------------------

DETERMINISTIC_DTYPES = [torch.float32, torch.bfloat16, torch.complex64, torch.int64, torch.uint8]
NEW_MEMORY = {
    "empty": lambda d, t: torch.empty(2, 3, device=d, dtype=t),
    "empty_strided": lambda d, t: torch.empty_strided((3, 2), (1, 3), device=d, dtype=t),
    "empty_like": lambda d, t: torch.empty_like(torch.zeros(4, device=d, dtype=t)),
    "resize_ grows": lambda d, t: torch.zeros(2, device=d, dtype=t).resize_(5),
}


@pytest.mark.parametrize("dtype", DETERMINISTIC_DTYPES, ids=str)
@pytest.mark.parametrize("make", list(NEW_MEMORY), ids=str)
def test_deterministic_mode_fills_new_memory_as_the_cpu(make, dtype):
    # torch.use_deterministic_algorithms(True) fills fresh memory with NaN or the dtype's
    # largest value (test_torch's test_deterministic_empty/_resize); neuron left it as it was.
    def run(device):
        before = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(True)
        try:
            return NEW_MEMORY[make](device, dtype)
        finally:
            torch.use_deterministic_algorithms(before)

    want = run("cpu")
    got = run(DEV)
    assert got.stride() == want.stride()
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bool], ids=str)
def test_nonzero_refuses_a_cpu_out(dtype):
    # A 0-dim CPU out= passed the device check as if it were a wrapped scalar and then failed
    # deep inside with "invalid neuron device index -1" (test_shape_ops's test_nonzero).
    values = torch.tensor([0, 1, 2], device=DEV).to(dtype)
    for out in (torch.empty([], dtype=torch.long), torch.empty(3, 1, dtype=torch.long)):
        with pytest.raises(RuntimeError, match="on the same device"):
            torch.nonzero(values, out=out)


# ---- fill_ and zero_ of complex128, overlapping targets included (test_torch) ------------------


@pytest.mark.parametrize("dtype", [torch.complex128, torch.complex64, torch.uint32], ids=str)
@pytest.mark.parametrize("stride", [(3, 1), (0, 1), (1, 0)])
@pytest.mark.parametrize("value", [0, 1.5, -2 + 0.25j, True])
def test_fill_writes_every_element_as_the_cpu_even_when_they_overlap(dtype, stride, value):
    # fill_ skips the overlap check on the CPU and CUDA (one value, so any order); complex128
    # fills on the device as two 8-byte halves.
    if isinstance(value, complex) and not dtype.is_complex:
        pytest.skip("a complex value does not fit an integer tensor (the CPU raises)")
    openneuron.clear_op_tracking()
    results = {}
    for device in ("cpu", DEV):
        target = torch.empty_strided((2, 3), stride, dtype=dtype, device=device)
        results[device] = target.fill_(value).cpu()
    assert torch.equal(results[DEV], results["cpu"])
    assert openneuron.get_fallback_ops() == {}


def test_zero_of_complex128_runs_on_the_device():
    openneuron.clear_op_tracking()
    target = torch.full((3, 2), 5 - 1j, dtype=torch.complex128, device=DEV)
    target[1:].zero_()
    expected = torch.full((3, 2), 5 - 1j, dtype=torch.complex128)
    expected[1:] = 0
    assert torch.equal(target.cpu(), expected)
    assert openneuron.get_fallback_ops() == {}


# ---- index_reduce of 16-bit floats rounds after every contribution (test_torch) ---------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_of_16bit_floats_equals_the_cpu_bit_for_bit(dtype, reduce, include_self):
    # The CPU's index_reduce rounds to the 16-bit dtype at each step (scatter_reduce, by
    # contrast, accumulates in fp32); summing in fp32 drifted by an ulp on repeated indices.
    generator = torch.Generator().manual_seed(5)
    for _ in range(20):
        dest = (torch.randn(3, 4, 5, generator=generator) * 3).to(dtype)
        source = (torch.randn(9, 4, 5, generator=generator) * 3).to(dtype)
        index = torch.randint(0, 3, (9,), generator=generator)
        expected = dest.clone().index_reduce_(0, index, source, reduce, include_self=include_self)
        on_device = dest.to(DEV).index_reduce_(
            0, index.to(DEV), source.to(DEV), reduce, include_self=include_self
        )
        assert torch.equal(on_device.cpu(), expected)
