"""CUDA's argument checks, made at the call on neuron: every case runs one call on the CPU and on
neuron and expects the same result (values, dtype, shape) or the same exception type with the
CPU's message. The native elementwise and foreach kernels check shapes, result dtypes, out= and
in-place dtypes and refused dtypes before they queue work, so nothing surfaces late or silently."""

import re
import warnings

import pytest
import torch

import openneuron  # noqa: F401  (registers the device)

DEV = "neuron"


def _outcome(fn, device):
    """("ok", results) with results moved to the CPU, or ("error", exception)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # host-fallback notices
            result = fn(device)
            if device == DEV:
                torch.neuron.synchronize()  # a queued kernel's failure would surface here
    except Exception as error:  # noqa: BLE001  (any exception type is compared)
        return "error", error
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    return "ok", [r.cpu() for r in results]


def _same_as_cpu(fn, message=None):
    """fn(device) behaves on neuron as on the CPU. When both raise, the types match and the
    neuron message contains `message` (default: the CPU's first line)."""
    cpu_kind, cpu_value = _outcome(fn, "cpu")
    dev_kind, dev_value = _outcome(fn, DEV)
    assert dev_kind == cpu_kind, f"cpu: {cpu_value!r}, neuron: {dev_value!r}"
    if cpu_kind == "error":
        assert type(dev_value) is type(cpu_value), f"cpu: {cpu_value!r}, neuron: {dev_value!r}"
        expected = message if message is not None else str(cpu_value).splitlines()[0]
        assert re.search(re.escape(expected), str(dev_value)), f"cpu: {cpu_value!r}"
        return
    assert len(dev_value) == len(cpu_value)
    for expected, actual in zip(cpu_value, dev_value):
        assert actual.dtype == expected.dtype
        assert actual.shape == expected.shape
        torch.testing.assert_close(actual, expected, equal_nan=True)


def _rand(shape, device, seed=0):
    """The same uniform values on every device."""
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed)).to(device)


def _ints(device, values=(1, 2, 3, 4)):
    return torch.tensor(values, device=device)


def _bools(device):
    return torch.tensor([True, False, True], device=device)


def _in_place(fn):
    """Runs an in-place foreach call and returns the lists it updated."""

    def run(lists, *args):
        fn(lists, *args)
        return lists

    return run


# ---- _foreach_* shapes ---------------------------------------------------------------------

FOREACH_BINARY = {
    "add": torch._foreach_add,
    "sub": torch._foreach_sub,
    "mul": torch._foreach_mul,
    "div": torch._foreach_div,
    "maximum": torch._foreach_maximum,
    "pow": torch._foreach_pow,
}
SHAPE_PAIRS = [
    ((2, 3), (3, 4)),  # not broadcastable
    ((2, 3), (3, 2)),  # same element count, not broadcastable
    ((2, 3), (3,)),  # broadcasts to self's shape
    ((3,), (2, 3)),  # broadcasts beyond self's shape
    ((2, 3), ()),
]


@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
@pytest.mark.parametrize("name", sorted(FOREACH_BINARY))
def test_foreach_list_operands_broadcast_or_raise(name, shapes):
    # Operands were read as if shaped like self: a (3, 4) other gave a (2, 3) result of its
    # first elements instead of the CPU's size-mismatch error.
    self_shape, other_shape = shapes
    fn = FOREACH_BINARY[name]

    def run(device):
        return fn([_rand(self_shape, device) + 1], [_rand(other_shape, device, seed=1) + 5])

    _same_as_cpu(run)


@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
@pytest.mark.parametrize("name", ["add", "mul", "pow"])
def test_foreach_in_place_needs_the_broadcast_shape(name, shapes):
    self_shape, other_shape = shapes
    fn = _in_place(getattr(torch, f"_foreach_{name}_"))
    _same_as_cpu(
        lambda d: fn([torch.ones(self_shape, device=d)], [torch.full(other_shape, 2.0, device=d)])
    )


@pytest.mark.parametrize("name", ["addcmul", "addcdiv", "lerp"])
def test_foreach_ternary_operands_broadcast_or_raise(name):
    fn = getattr(torch, f"_foreach_{name}")
    for shapes in [((2, 3), (3, 2), (2, 3)), ((2, 3), (3,), (2, 3)), ((2, 3), (2, 3), (4, 3))]:
        _same_as_cpu(lambda d, s=shapes: fn(*([torch.full(x, 0.5, device=d)] for x in s)))


def test_foreach_empty_list_raises():
    _same_as_cpu(lambda d: torch._foreach_add([], []))


# ---- _foreach_* result dtypes --------------------------------------------------------------


@pytest.mark.parametrize("exponent", [0.447, 2, -0.5, True])
def test_foreach_pow_promotes_integers_by_a_float_exponent(exponent):
    # The exponent promotes as pow's scalar does: int ** 0.447 is float (it was int, truncated).
    _same_as_cpu(lambda d: torch._foreach_pow([_ints(d)], exponent))
    _same_as_cpu(lambda d: torch._foreach_pow([_ints(d)], [exponent]))
    _same_as_cpu(lambda d: _in_place(torch._foreach_pow_)([_ints(d)], exponent))


def test_foreach_pow_of_integers_by_a_negative_integer_raises():
    _same_as_cpu(lambda d: torch._foreach_pow([_ints(d)], -1))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "clamp_min"])
def test_foreach_in_place_refuses_a_result_it_cannot_hold(name):
    fn = _in_place(getattr(torch, f"_foreach_{name}_"))
    _same_as_cpu(lambda d: fn([_ints(d)], 0.5))
    _same_as_cpu(lambda d: fn([_ints(d)], [torch.full((4,), 0.5, device=d)]))


def test_foreach_float_alpha_on_integers_raises():
    _same_as_cpu(lambda d: torch._foreach_add([_ints(d)], [_ints(d)], alpha=0.5))


@pytest.mark.parametrize(
    "call",
    [
        lambda d: torch._foreach_add([torch.ones(3, device=d)], 1j),
        lambda d: torch._foreach_mul([torch.ones(3, device=d)], [2j]),
        lambda d: _in_place(torch._foreach_add_)([torch.ones(3, device=d)], 1j),
        lambda d: torch._foreach_addcmul(
            [torch.ones(3, device=d)] * 1, [torch.ones(3, device=d)], [torch.ones(3, device=d)], 1j
        ),
    ],
    ids=["add", "mul_list", "add_in_place", "addcmul_value"],
)
def test_foreach_complex_scalars_promote_or_raise_as_on_cpu(call):
    _same_as_cpu(call)


# ---- dtypes an op refuses ------------------------------------------------------------------

REFUSED = {
    "neg": lambda d: -_bools(d),
    "neg_out": lambda d: torch.neg(_bools(d), out=torch.empty(3, dtype=torch.bool, device=d)),
    "sub_tensors": lambda d: _bools(d) - _bools(d),
    "sub_scalar": lambda d: _bools(d) - 1,
    "sub_bool_scalar": lambda d: torch.ones(3, device=d) - True,
    "rsub": lambda d: 1 - _bools(d),
    "pow_tensors": lambda d: _bools(d) ** _bools(d),
    "pow_scalar": lambda d: _bools(d) ** 2,
    "foreach_neg": lambda d: torch._foreach_neg([_bools(d)]),
    "foreach_neg_": lambda d: _in_place(torch._foreach_neg_)([_bools(d)]),
    "foreach_sub": lambda d: torch._foreach_sub([_bools(d)], [_bools(d)]),
    "foreach_sub_scalar": lambda d: torch._foreach_sub([_bools(d)], 1),
    "foreach_sub_bool_scalar": lambda d: torch._foreach_sub([torch.ones(3, device=d)], True),
    "foreach_pow_lists": lambda d: torch._foreach_pow([_bools(d)], [_bools(d)]),
    "foreach_pow_scalar": lambda d: torch._foreach_pow([_bools(d)], 2),
    "foreach_abs": lambda d: torch._foreach_abs([_bools(d)]),
    "foreach_clamp_min": lambda d: torch._foreach_clamp_min([_bools(d)], [_bools(d)]),
    "foreach_maximum_lists": lambda d: torch._foreach_maximum([_bools(d)], [_bools(d)]),
    "foreach_maximum_scalar": lambda d: torch._foreach_maximum([_bools(d)], True),
    "foreach_minimum_scalar_": lambda d: _in_place(torch._foreach_minimum_)([_bools(d)], [False]),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_bool_operands_refused_as_on_cpu(name):
    _same_as_cpu(REFUSED[name])


INTEGER_ONLY_FLOAT_OPS = {
    "addcdiv": lambda d: torch.addcdiv(_ints(d), _ints(d), _ints(d)),
    "addcdiv_": lambda d: _ints(d).addcdiv_(_ints(d), _ints(d)),
    "lerp_scalar": lambda d: torch.lerp(_ints(d), _ints(d), 0.5),
    "lerp_tensor": lambda d: torch.lerp(_ints(d), _ints(d), _ints(d)),
    "foreach_addcdiv": lambda d: torch._foreach_addcdiv([_ints(d)], [_ints(d)], [_ints(d)]),
    "foreach_addcdiv_": lambda d: _in_place(torch._foreach_addcdiv_)(
        [_ints(d)], [_ints(d)], [_ints(d)]
    ),
    "addcdiv_float_self": lambda d: torch.addcdiv(torch.ones(4, device=d), _ints(d), _ints(d)),
    "addcdiv_float_tensor2": lambda d: torch.addcdiv(_ints(d), _ints(d), torch.ones(4, device=d)),
    "foreach_addcdiv_float_self": lambda d: torch._foreach_addcdiv(
        [torch.ones(4, device=d)], [_ints(d)], [_ints(d) > 2]
    ),
    "foreach_lerp_scalar": lambda d: torch._foreach_lerp([_ints(d)], [_ints(d)], 0.5),
    "foreach_lerp_list": lambda d: torch._foreach_lerp([_ints(d)], [_ints(d)], [_ints(d)]),
    "foreach_addcmul_float_value": lambda d: torch._foreach_addcmul(
        [_ints(d)], [_ints(d)], [_ints(d)], 0.5
    ),
}


@pytest.mark.parametrize("name", sorted(INTEGER_ONLY_FLOAT_OPS))
def test_integer_operands_of_float_ops_raise_at_the_call(name):
    # These failed only at the next synchronize, inside the queued kernel.
    cpu_kind, cpu_error = _outcome(INTEGER_ONLY_FLOAT_OPS[name], "cpu")
    if cpu_kind == "error":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(type(cpu_error)):
                INTEGER_ONLY_FLOAT_OPS[name](DEV)  # no synchronize: the call itself raises
    _same_as_cpu(INTEGER_ONLY_FLOAT_OPS[name])


def test_lerp_refuses_mixed_dtypes():
    bf16 = torch.bfloat16
    _same_as_cpu(
        lambda d: torch.lerp(torch.ones(3, device=d), torch.ones(3, dtype=bf16, device=d), 0.5)
    )
    _same_as_cpu(
        lambda d: torch.lerp(
            torch.ones(3, device=d), torch.ones(3, device=d), torch.ones(3, dtype=bf16, device=d)
        )
    )
    _same_as_cpu(
        lambda d: torch._foreach_lerp(
            [torch.ones(3, device=d)], [torch.ones(3, dtype=bf16, device=d)], 0.5
        )
    )


# ---- complex Python scalars ----------------------------------------------------------------

COMPLEX_SCALARS = {
    "add": lambda d: torch.ones(3, device=d) + 1j,
    "radd": lambda d: 1j + torch.ones(3, device=d),
    "mul": lambda d: torch.ones(3, device=d) * (2 - 1j),
    "sub": lambda d: torch.ones(3, device=d) - 1j,
    "div": lambda d: torch.ones(3, device=d) / 1j,
    "pow": lambda d: torch.ones(3, device=d) ** 1j,
    "int_add": lambda d: _ints(d) + 1j,
    "add_in_place": lambda d: torch.ones(3, device=d).add_(1j),
    "eq": lambda d: torch.ones(3, device=d) == 1j,
}


@pytest.mark.parametrize("name", sorted(COMPLEX_SCALARS))
def test_complex_python_scalars_promote_as_on_cpu(name):
    _same_as_cpu(COMPLEX_SCALARS[name])


# ---- out= and in-place dtypes --------------------------------------------------------------

EXACT_OUT_OPS = {
    "neg": torch.neg,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "abs": torch.abs,
    "round": torch.round,
    "trunc": torch.trunc,
    "sign": torch.sign,
    "clamp": lambda x, out: torch.clamp(x, 0, 3, out=out),
    "clamp_min": lambda x, out: torch.clamp_min(x, 1, out=out),
    "hardtanh": lambda x, out: torch._C._nn.hardtanh(x, out=out),
    "nan_to_num": torch.nan_to_num,
}


@pytest.mark.parametrize("dtypes", [(torch.int64, torch.float32), (torch.float32, torch.float64)])
@pytest.mark.parametrize("name", sorted(EXACT_OUT_OPS))
def test_out_of_another_dtype_refused_where_cpu_refuses(name, dtypes):
    # TensorIterator's unary-op rule: out= must have the result's dtype exactly, even when the
    # result would cast to it safely.
    source, target = dtypes
    fn = EXACT_OUT_OPS[name]
    _same_as_cpu(
        lambda d: fn(
            torch.arange(4, device=d).to(source), out=torch.empty(4, dtype=target, device=d)
        )
    )


CASTABLE_OUT_OPS = {
    "exp": lambda x, out: torch.exp(x, out=out),
    "add": lambda x, out: torch.add(x, 1, out=out),
    "clamp_by_tensor": lambda x, out: torch.clamp(x, torch.zeros_like(x), out=out),
    "where": lambda x, out: torch.where(x > 1, x, x, out=out),
    "lerp_scalar": lambda x, out: torch.lerp(x, x, 0.5, out=out),
    "lerp_tensor": lambda x, out: torch.lerp(x, x, x, out=out),
}


@pytest.mark.parametrize("target", [torch.float64, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("name", sorted(CASTABLE_OUT_OPS))
def test_out_dtype_rules_of_binary_and_float_ops(name, target):
    fn = CASTABLE_OUT_OPS[name]
    _same_as_cpu(lambda d: fn(_rand(4, d) + 1, out=torch.empty(4, dtype=target, device=d)))


def test_masked_fill_out_must_match():
    _same_as_cpu(
        lambda d: torch.ops.aten.masked_fill.Scalar_out(
            torch.ones(3, device=d),
            torch.ones(3, device=d) > 0,
            1,
            out=torch.empty(3, dtype=torch.float64, device=d),
        )
    )


@pytest.mark.parametrize("target", [torch.int64, torch.bool, torch.float32])
def test_cat_into_an_impossible_dtype_is_a_type_error(target):
    _same_as_cpu(
        lambda d: torch.cat(
            [_rand(2, d), _rand(3, d, seed=1)],
            out=torch.empty(0, dtype=target, device=d),
        )
    )


# ---- values and operands other ops refuse --------------------------------------------------

FILL_VALUES = [
    (torch.uint8, 300),
    (torch.int64, float("inf")),
    (torch.float32, 1e40),
    (torch.bfloat16, 1e40),
    (torch.float16, 1e5),
    (torch.float32, 1j),
    (torch.int32, 2.5),
    (torch.bool, float("nan")),
]


@pytest.mark.parametrize("dtype, value", FILL_VALUES, ids=str)
def test_fill_refuses_a_value_its_dtype_cannot_hold(dtype, value):
    # The value was stored wrapped (300 into uint8 gave 44).
    _same_as_cpu(lambda d: torch.zeros(3, dtype=dtype, device=d).fill_(value))
    _same_as_cpu(
        lambda d: torch.zeros(3, dtype=dtype, device=d).masked_fill(_bools(d), value),
    )


def test_hardtanh_of_unsigned_integers_needs_non_negative_limits():
    _same_as_cpu(
        lambda d: torch.nn.functional.hardtanh(torch.arange(4, dtype=torch.uint8, device=d))
    )
    _same_as_cpu(
        lambda d: torch.nn.functional.hardtanh(
            torch.arange(4, dtype=torch.uint8, device=d), 0.0, 2.0
        )
    )


def test_threshold_backward_promotes_and_checks_its_out():
    # A bf16 gradient of an fp32 input is an fp32 gradient; an int64 out= cannot hold it.
    def grads(d):
        return _rand(4, d).to(torch.bfloat16), _rand(4, d, seed=1)

    _same_as_cpu(lambda d: torch.ops.aten.threshold_backward(*grads(d), 0.5))
    _same_as_cpu(
        lambda d: torch.ops.aten.threshold_backward.grad_input(
            *grads(d), 0.5, grad_input=torch.empty(4, dtype=torch.int64, device=d)
        )
    )


def test_complex_half_pow_cannot_be_written_into_a_real_tensor():
    # CUDA computes complex-half pow (neuron does, in complex64), but never into a real self.
    _same_as_cpu(lambda d: torch.ones(3, dtype=torch.float16, device=d).pow_(1j))


def _fused_adam(device, grad_dtype):
    params = [torch.ones(3, device=device)]
    grads = [torch.ones(3, dtype=grad_dtype, device=device)]
    state = [torch.zeros(3, device=device)], [torch.zeros(3, device=device)]
    steps = [torch.ones((), device=device)]
    torch._fused_adam_(
        params, grads, *state, [], steps, lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0,
        eps=1e-8, amsgrad=False, maximize=False,
    )  # fmt: skip
    return params


def _fused_sgd(device, grad_dtype):
    params = [torch.ones(3, device=device)]
    grads = [torch.ones(3, dtype=grad_dtype, device=device)]
    torch._fused_sgd_(
        params, grads, [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0,
        nesterov=False, maximize=False, is_first_step=True,
    )  # fmt: skip
    return params


@pytest.mark.parametrize("step", [_fused_adam, _fused_sgd], ids=["adam", "sgd"])
@pytest.mark.parametrize("grad_dtype", [torch.float32, torch.bfloat16], ids=str)
def test_fused_optimizers_need_one_dtype_per_parameter(step, grad_dtype):
    # A bf16 gradient of an fp32 parameter was read as it is; the CPU refuses it.
    _same_as_cpu(lambda d: step(d, grad_dtype))
