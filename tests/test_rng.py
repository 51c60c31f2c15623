"""Device random numbers: per-device default generators, explicit generators, seeding, state."""

import pytest
import torch

import openneuron


def draw(*shape: int, device: str = "neuron", **kwargs) -> torch.Tensor:
    return torch.rand(*shape, device=device, **kwargs).cpu()


def draw_normal(*shape: int, device: str = "neuron", **kwargs) -> torch.Tensor:
    return torch.randn(*shape, device=device, **kwargs).cpu()


def test_manual_seed_reproduces_rand_and_randn():
    torch.neuron.manual_seed(1234)
    first = draw(1000), draw_normal(1000)
    torch.neuron.manual_seed(1234)
    second = draw(1000), draw_normal(1000)
    assert torch.equal(first[0], second[0])
    assert torch.equal(first[1], second[1])
    assert torch.neuron.initial_seed() == 1234


def test_successive_draws_differ():
    torch.neuron.manual_seed(0)
    assert not torch.equal(draw(64), draw(64))


def test_different_seeds_give_different_draws():
    torch.neuron.manual_seed(1)
    one = draw(256)
    torch.neuron.manual_seed(2)
    assert not torch.equal(one, draw(256))


def test_manual_seed_seeds_only_the_current_device(restore_device, second_device):
    torch.neuron.manual_seed_all(10)
    with torch.neuron.device(1):
        torch.neuron.manual_seed(11)
        assert torch.neuron.initial_seed() == 11
    assert torch.neuron.initial_seed() == 10
    assert torch.neuron.default_generators[1].initial_seed() == 11


def test_manual_seed_all_seeds_every_device(second_device):
    torch.neuron.manual_seed_all(77)
    assert all(g.initial_seed() == 77 for g in torch.neuron.default_generators)
    on_zero = draw(128, device="neuron:0")
    torch.neuron.manual_seed_all(77)
    assert torch.equal(draw(128, device="neuron:0"), on_zero)


def test_seed_picks_a_new_seed_that_reproduces():
    torch.neuron.manual_seed(5)
    torch.neuron.seed()
    chosen = torch.neuron.initial_seed()
    assert chosen != 5  # a 64-bit random seed; equal to 5 with probability 2**-64
    drawn = draw(100)
    torch.neuron.manual_seed(chosen)
    assert torch.equal(draw(100), drawn)


def test_rng_state_round_trip_reproduces_draws():
    torch.neuron.manual_seed(42)
    draw(10)  # move the offset away from zero
    state = torch.neuron.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    expected = draw(1000), draw_normal(1000)
    torch.neuron.set_rng_state(state)
    assert torch.equal(draw(1000), expected[0])
    assert torch.equal(draw_normal(1000), expected[1])


def test_rng_state_of_the_second_device(second_device):
    torch.neuron.manual_seed_all(3)
    state = torch.neuron.get_rng_state(1)
    expected = draw(50, device="neuron:1")
    draw(50, device="neuron:0")  # draws on neuron:0 do not move neuron:1's state
    torch.neuron.set_rng_state(state, 1)
    assert torch.equal(draw(50, device="neuron:1"), expected)


def test_get_and_set_rng_state_all(second_device):
    torch.neuron.manual_seed_all(8)
    states = torch.neuron.get_rng_state_all()
    assert len(states) == torch.neuron.device_count()
    expected = [draw(20, device=f"neuron:{i}") for i in range(2)]
    torch.neuron.set_rng_state_all(states)
    assert all(torch.equal(draw(20, device=f"neuron:{i}"), expected[i]) for i in range(2))


def test_set_rng_state_rejects_a_malformed_state():
    with pytest.raises(RuntimeError, match="16 bytes"):
        torch.neuron.set_rng_state(torch.zeros(3, dtype=torch.uint8))


def test_explicit_generator_is_deterministic():
    g = torch.Generator(device="neuron")
    assert g.device == torch.device("neuron", 0)
    g.manual_seed(99)
    first = draw(500, generator=g), draw_normal(500, generator=g)
    g.manual_seed(99)
    assert torch.equal(draw(500, generator=g), first[0])
    assert torch.equal(draw_normal(500, generator=g), first[1])
    g.manual_seed(100)
    assert not torch.equal(draw(500, generator=g), first[0])


def test_explicit_generator_leaves_the_default_generator_alone():
    torch.neuron.manual_seed(7)
    state = torch.neuron.get_rng_state()
    g = torch.Generator(device="neuron").manual_seed(7)
    draw(100, generator=g)
    assert torch.equal(torch.neuron.get_rng_state(), state)
    # Same seed, same offset: the explicit generator matches the default one.
    g.manual_seed(7)
    assert torch.equal(draw(100, generator=g), draw(100))


def test_explicit_generator_state_round_trip():
    g = torch.Generator(device="neuron").manual_seed(3)
    state = g.get_state()
    expected = draw(64, generator=g)
    g.set_state(state)
    assert torch.equal(draw(64, generator=g), expected)


def test_generator_on_the_second_device(second_device):
    g = torch.Generator(device=second_device).manual_seed(5)
    first = torch.rand(64, device=second_device, generator=g)
    assert first.device == second_device
    g.manual_seed(5)
    assert torch.equal(torch.rand(64, device=second_device, generator=g).cpu(), first.cpu())


def test_neuron_draws_are_independent_of_the_cpu_generator():
    torch.neuron.manual_seed(2024)
    torch.default_generator.manual_seed(1)
    torch.rand(10)
    first = draw(256)
    torch.neuron.manual_seed(2024)
    torch.default_generator.manual_seed(2)
    torch.rand(1000)
    assert torch.equal(draw(256), first)


def test_torch_manual_seed_seeds_every_neuron_device():
    torch.manual_seed(31)
    assert all(g.initial_seed() == 31 for g in torch.neuron.default_generators)
    first = draw(64)
    torch.manual_seed(31)
    assert torch.equal(draw(64), first)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_uniform_values_lie_in_the_unit_interval(dtype):
    torch.neuron.manual_seed(0)
    values = draw(100_000, dtype=dtype)
    assert values.dtype == dtype
    assert values.min() >= 0 and values.max() < 1
    # Roughly uniform: each tenth of the interval holds about a tenth of the samples.
    counts = torch.histc(values.float(), bins=10, min=0, max=1)
    torch.testing.assert_close(counts / values.numel(), torch.full((10,), 0.1), rtol=0, atol=0.01)


def test_uniform_respects_a_custom_range():
    torch.neuron.manual_seed(0)
    values = torch.empty(10_000, device="neuron").uniform_(-3, 5).cpu()
    assert values.min() >= -3 and values.max() < 5


def test_randn_has_zero_mean_and_unit_std():
    torch.neuron.manual_seed(0)
    values = draw_normal(100_000)
    # Standard errors: 0.003 for the mean and 0.002 for the std at this sample size.
    torch.testing.assert_close(values.mean(), torch.tensor(0.0), rtol=0, atol=0.02)
    torch.testing.assert_close(values.std(), torch.tensor(1.0), rtol=0, atol=0.02)


def test_normal_respects_mean_and_std():
    torch.neuron.manual_seed(0)
    values = torch.empty(100_000, device="neuron").normal_(3.0, 0.5).cpu()
    torch.testing.assert_close(values.mean(), torch.tensor(3.0), rtol=0, atol=0.02)
    torch.testing.assert_close(values.std(), torch.tensor(0.5), rtol=0, atol=0.01)


def test_per_device_default_generators_are_distinct(second_device):
    zero, one = torch.neuron.default_generators[0], torch.neuron.default_generators[1]
    assert zero is not one
    assert zero.device == torch.device("neuron", 0) and one.device == second_device
    zero.manual_seed(1)
    one.manual_seed(2)
    assert zero.initial_seed() == 1 and one.initial_seed() == 2
    # The default generators are the ones factory calls use.
    zero.manual_seed(6)
    expected = draw(32, device="neuron:0")
    torch.neuron.manual_seed(6)
    assert torch.equal(draw(32, device="neuron:0"), expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.int64])
def test_geometric_runs_natively_with_the_distributions_mean(dtype):
    openneuron.clear_op_tracking()
    torch.manual_seed(11)
    draws = torch.empty(200_000, dtype=dtype, device="neuron").geometric_(0.25)
    assert openneuron.get_fallback_ops() == {}
    values = draws.cpu().double()
    assert values.min().item() >= 1 and torch.equal(values, values.round())
    # Mean 1/p = 4 and variance (1-p)/p^2 = 12: the sample mean lies within 5 standard errors.
    assert abs(values.mean().item() - 4.0) < 5 * (12.0 / values.numel()) ** 0.5
    # Seeded draws repeat.
    torch.manual_seed(11)
    again = torch.empty(200_000, dtype=dtype, device="neuron").geometric_(0.25)
    assert torch.equal(again.cpu(), draws.cpu())
    with pytest.raises(RuntimeError, match="geometric_ expects p to be in"):
        draws.geometric_(1.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_cauchy_and_log_normal_run_natively_with_the_distributions_quantiles(dtype):
    openneuron.clear_op_tracking()
    torch.manual_seed(12)
    cauchy = torch.empty(100_000, dtype=dtype, device="neuron").cauchy_(1.5, 2.0)
    log_normal = torch.empty(100_000, dtype=dtype, device="neuron").log_normal_(0.5, 0.25)
    assert openneuron.get_fallback_ops() == {}
    # Cauchy(1.5, 2): median 1.5, quartiles 1.5 -+ 2; log-normal(0.5, 0.25): median e^0.5 and
    # log's standard deviation 0.25. Each estimate lies well within its sampling error.
    c = cauchy.cpu().double()
    quartiles = torch.quantile(c, torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
    torch.testing.assert_close(
        quartiles, torch.tensor([-0.5, 1.5, 3.5], dtype=torch.float64), atol=0.06, rtol=0
    )
    logs = log_normal.cpu().double().log()
    assert abs(logs.median().item() - 0.5) < 0.01 and abs(logs.std().item() - 0.25) < 0.01
    assert bool((log_normal.cpu() > 0).all())
    torch.manual_seed(12)
    again = torch.empty(100_000, dtype=dtype, device="neuron").cauchy_(1.5, 2.0)
    assert torch.equal(again.cpu(), cauchy.cpu())
    with pytest.raises(RuntimeError, match="cauchy_ expects sigma > 0.0"):
        cauchy.cauchy_(0.0, -1.0)
    with pytest.raises(RuntimeError, match="log_normal_ expects std > 0.0"):
        log_normal.log_normal_(0.0, 0.0)


def test_random_integers_into_float64_are_drawn_on_the_device():
    # float64 holds drawn integers exactly: they are drawn as int64 and converted, no float64
    # arithmetic involved, so randint(dtype=float64) needs no host round trip.
    openneuron.clear_op_tracking()
    torch.manual_seed(13)
    draws = torch.randint(-3, 7, (50_000,), dtype=torch.float64, device="neuron")
    upto = torch.empty(1000, dtype=torch.float64, device="neuron").random_(5)
    assert openneuron.get_fallback_ops() == {}
    values = draws.cpu()
    assert values.dtype == torch.float64 and torch.equal(values, values.round())
    assert values.min().item() == -3 and values.max().item() == 6
    assert abs(values.mean().item() - 1.5) < 5 * (99 / 12 / values.numel()) ** 0.5
    assert set(upto.cpu().tolist()) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        draws.random_(5, 5)


def test_cat_with_float64_pieces_stays_on_the_device():
    # Concatenation only moves and converts elements, which the device does for float64 too.
    a = torch.randn(2, 3)
    b = torch.randn(4, 3, dtype=torch.float64)
    openneuron.clear_op_tracking()
    got = torch.cat([a.to("neuron"), b.to("neuron")])
    assert openneuron.get_fallback_ops() == {}
    assert got.dtype == torch.float64 and torch.equal(got.cpu(), torch.cat([a, b]))
