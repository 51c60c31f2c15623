"""Streams (in-order queues run by worker threads) and events, and the asynchrony they imply."""

import json
import time

import pytest
import torch

neuron0 = torch.device("neuron", 0)


def big_operands(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Operands whose matmul keeps a stream busy long enough for a missing wait to show."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(384, 384, generator=g), torch.randn(384, 384, generator=g)


# --- stream objects and the current stream ------------------------------------------------------


def test_new_stream_is_a_torch_stream_on_the_current_device():
    stream = torch.neuron.Stream()
    assert isinstance(stream, torch.Stream)
    assert stream.device == neuron0
    assert stream.stream_id != 0  # 0 is the default stream
    assert stream != torch.neuron.default_stream()


def test_torch_stream_accepts_the_neuron_device():
    stream = torch.Stream(device="neuron")
    assert stream.device.type == torch.accelerator.current_accelerator().type == "neuron"
    assert stream.device_index == 0
    assert stream.stream_id != 0


def test_stream_on_second_device(second_device):
    stream = torch.neuron.Stream(1)
    assert stream.device == second_device
    assert torch.neuron.default_stream(1).device == second_device


def test_default_stream_is_current_and_has_id_zero():
    current = torch.neuron.current_stream()
    default = torch.neuron.default_stream()
    assert current == default
    assert default.stream_id == 0
    assert torch.accelerator.current_stream() == default


def test_stream_context_makes_the_stream_current_and_restores():
    outer, inner = torch.neuron.Stream(), torch.neuron.Stream()
    with torch.neuron.stream(outer):
        assert torch.neuron.current_stream() == outer
        assert torch.accelerator.current_stream() == outer
        with torch.neuron.stream(inner):
            assert torch.neuron.current_stream() == inner
        assert torch.neuron.current_stream() == outer
    assert torch.neuron.current_stream() == torch.neuron.default_stream()


def test_torch_stream_is_a_context_manager():
    stream = torch.Stream(device="neuron")
    with stream:
        assert torch.accelerator.current_stream() == stream
    assert torch.accelerator.current_stream() == torch.neuron.default_stream()


def test_set_stream_makes_the_stream_current():
    stream = torch.neuron.Stream()
    try:
        torch.neuron.set_stream(stream)
        assert torch.neuron.current_stream() == stream
    finally:
        torch.neuron.set_stream(torch.neuron.default_stream())
    assert torch.neuron.current_stream().stream_id == 0


def test_stream_context_for_another_device_restores_the_current_device(
    restore_device, second_device
):
    stream = torch.neuron.Stream(1)
    with torch.neuron.stream(stream):
        assert torch.neuron.current_stream(1) == stream
    assert torch.neuron.current_stream(1) == torch.neuron.default_stream(1)
    assert torch.neuron.current_device() == 0


# --- ordering work across streams --------------------------------------------------------------


def test_side_stream_with_wait_stream_computes_correct_values():
    a, b = big_operands()
    a_dev, b_dev = a.to("neuron"), b.to("neuron")
    default = torch.neuron.current_stream()
    produced = a_dev @ b_dev  # queued on the default stream
    side = torch.neuron.Stream()
    side.wait_stream(default)
    with torch.neuron.stream(side):
        consumed = produced * 2 + 1
    default.wait_stream(side)
    result = consumed - b_dev
    torch.testing.assert_close(result.cpu(), (a @ b) * 2 + 1 - b, rtol=1e-4, atol=1e-3)


def test_wait_event_orders_work_across_streams():
    a, b = big_operands(1)
    side = torch.neuron.Stream()
    with torch.neuron.stream(side):
        a_dev, b_dev = a.to("neuron"), b.to("neuron")
        product = a_dev @ b_dev
        done = torch.neuron.Event()
        done.record()
    torch.neuron.current_stream().wait_event(done)
    result = product + 1
    torch.testing.assert_close(result.cpu(), a @ b + 1, rtol=1e-4, atol=1e-3)


def test_stream_record_event_and_wait():
    a, b = big_operands(2)
    side = torch.neuron.Stream()
    with torch.neuron.stream(side):
        product = a.to("neuron") @ b.to("neuron")
    event = side.record_event()
    assert isinstance(event, torch.Event)
    torch.neuron.current_stream().wait_event(event)
    torch.testing.assert_close((product * 3).cpu(), (a @ b) * 3, rtol=1e-4, atol=1e-3)


def test_record_stream_keeps_a_tensor_alive_for_its_other_stream():
    a, b = big_operands(3)
    side = torch.neuron.Stream()
    source = a.to("neuron")
    side.wait_stream(torch.neuron.current_stream())
    with torch.neuron.stream(side):
        result = source @ b.to("neuron")
    source.record_stream(side)
    del source
    # Without record_stream the freed block could be reused (and overwritten) here while the
    # side stream still reads it.
    overwrite = torch.full((384, 384), -7.0, device="neuron")
    torch.neuron.synchronize()
    torch.testing.assert_close(result.cpu(), a @ b, rtol=1e-4, atol=1e-3)
    assert torch.all(overwrite.cpu() == -7.0)


def test_record_stream_with_another_devices_stream_holds_the_block(restore_device, second_device):
    # A neuron:0 tensor used by work on a neuron:1 stream: its block must not be handed out
    # again until that stream's queued work has passed (it is looked up on the data's own
    # device, not the stream's).
    busy = torch.neuron.Stream(1)
    with torch.neuron.device(1), torch.neuron.stream(busy):
        torch.neuron._sleep(200_000_000)  # 200 ms of queued work on neuron:1
    tensor = torch.empty(1 << 16, device="neuron:0")
    address = tensor.data_ptr()
    tensor.record_stream(busy)
    del tensor
    again = torch.empty(1 << 16, device="neuron:0")
    assert again.data_ptr() != address
    busy.synchronize()


# --- synchronisation and events -----------------------------------------------------------------


def test_stream_synchronize_leaves_the_stream_idle():
    a, b = big_operands(4)
    side = torch.neuron.Stream()
    with torch.neuron.stream(side):
        product = a.to("neuron") @ b.to("neuron")
    side.synchronize()
    assert side.query()
    torch.testing.assert_close(product.cpu(), a @ b, rtol=1e-4, atol=1e-3)


def test_sleep_keeps_the_current_stream_busy_for_its_cycles():
    stream = torch.neuron.current_stream()
    start = time.perf_counter()
    torch.neuron._sleep(30_000_000)  # 30 ms at one cycle a nanosecond
    assert not stream.query()
    stream.synchronize()
    assert time.perf_counter() - start >= 0.03
    assert stream.query()


def test_device_synchronize_waits_for_every_stream(restore_device, second_device):
    a, b = big_operands(5)
    zero_streams = [torch.neuron.Stream(), torch.neuron.Stream()]
    for stream in zero_streams:
        with torch.neuron.stream(stream):
            a.to("neuron") @ b.to("neuron")
    one_stream = torch.neuron.Stream(1)
    with torch.neuron.device(1), torch.neuron.stream(one_stream):
        a.to(second_device) @ b.to(second_device)
    assert torch.neuron.current_device() == 0
    torch.neuron.synchronize()  # the current device, neuron:0
    assert all(stream.query() for stream in zero_streams)
    assert torch.neuron.default_stream(0).query()
    torch.neuron.synchronize(1)
    assert one_stream.query()


def test_accelerator_synchronize_waits_for_the_current_device():
    a, b = big_operands(8)
    stream = torch.neuron.Stream()
    with torch.neuron.stream(stream):
        a.to("neuron") @ b.to("neuron")
    torch.accelerator.synchronize()
    assert stream.query()


def test_event_synchronize_then_query():
    event = torch.neuron.Event()
    a, b = big_operands(6)
    a.to("neuron") @ b.to("neuron")
    event.record()
    event.synchronize()
    assert event.query()


def test_torch_event_on_neuron():
    event = torch.Event(device="neuron")
    assert event.device.type == "neuron"
    event.record()
    event.synchronize()
    assert event.query()


def test_timing_events_measure_a_non_negative_interval():
    start = torch.Event(device="neuron", enable_timing=True)
    end = torch.Event(device="neuron", enable_timing=True)
    a, b = big_operands(7)
    a_dev, b_dev = a.to("neuron"), b.to("neuron")
    start.record()
    a_dev @ b_dev
    end.record()
    end.synchronize()
    assert start.query() and end.query()
    assert start.elapsed_time(end) >= 0.0


def test_neuron_timing_events_measure_a_non_negative_interval():
    start = torch.neuron.Event(enable_timing=True)
    end = torch.neuron.Event(enable_timing=True)
    start.record()
    torch.ones(256, 256, device="neuron") @ torch.ones(256, 256, device="neuron")
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0


def test_elapsed_time_needs_timing_events():
    start, end = torch.Event(device="neuron"), torch.Event(device="neuron")
    start.record()
    end.record()
    end.synchronize()
    with pytest.raises(ValueError, match="enable_timing"):
        start.elapsed_time(end)


# --- asynchrony and launch blocking ------------------------------------------------------------

# Imports torch once, then forks one child per launch mode (before the runtime exists, so forking
# is allowed); each child reads OPENNEURON_LAUNCH_BLOCKING at its first device use.
LAUNCH_MODE_SCRIPT = """
import json
import time
import os

import torch
from openneuron import _C


def run_in_this_mode():
    a = torch.randn(256, 256)
    a_dev = a.to("neuron")
    stream = torch.neuron.current_stream()
    idle_after_each_op = []
    for _ in range(3):
        a_dev = a_dev @ a_dev * 1e-2
        # With launch blocking the op ran inline, so nothing can be pending when it returns.
        idle_after_each_op.append(stream.query())
    torch.neuron.synchronize()
    expected = a
    for _ in range(3):
        expected = expected @ expected * 1e-2
    torch.testing.assert_close(a_dev.cpu(), expected, rtol=1e-3, atol=1e-3)
    return {
        "launch_blocking": _C._config()["launch_blocking"],
        "idle_after_each_op": all(idle_after_each_op),
    }


results = {}
for mode in ("1", None):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        if mode is not None:
            os.environ["OPENNEURON_LAUNCH_BLOCKING"] = mode
        with os.fdopen(write_end, "w") as out:
            json.dump(run_in_this_mode(), out)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        results[mode or "unset"] = json.load(pipe)
    os.waitpid(pid, 0)
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def launch_mode_results(run_python) -> dict[str, dict]:
    done = run_python(LAUNCH_MODE_SCRIPT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_launch_blocking_runs_work_inline(launch_mode_results):
    assert launch_mode_results["1"] == {"launch_blocking": True, "idle_after_each_op": True}


def test_queued_mode_is_the_default_and_gives_the_same_results(launch_mode_results):
    # Whether a stream is still busy is timing-dependent, so only the mode is checked (the
    # results were compared with the CPU inside the child).
    assert launch_mode_results["unset"]["launch_blocking"] is False


def queue_out_of_range_nll_loss() -> torch.Tensor:
    """With deferred index checks, nll_loss checks its targets inside the queued kernel, as
    CUDA's device-side asserts do (by default they raise at the call, before anything queues)."""
    from openneuron import _C

    log_probs = torch.randn(4, 3, device="neuron").log_softmax(-1)
    targets = torch.tensor([0, 1, 7, 2], device="neuron")
    previous = _C._set_deferred_index_checks(True)
    try:
        return torch.nn.functional.nll_loss(log_probs, targets)
    finally:
        _C._set_deferred_index_checks(previous)


@pytest.mark.parametrize("sync", ["synchronize", "item"])
def test_queued_error_surfaces_at_the_next_synchronizing_call_naming_the_op(sync):
    loss = queue_out_of_range_nll_loss()  # returns at once: the failure is still queued
    with pytest.raises(torch.AcceleratorError, match=r"aten::nll_loss_forward.*Target 7"):
        if sync == "synchronize":
            torch.neuron.synchronize()
        else:
            loss.item()
    # Raised once, and the device keeps working.
    torch.neuron.synchronize()
    torch.testing.assert_close((torch.ones(2, device="neuron") * 3).cpu(), torch.full((2,), 3.0))


def test_launch_blocking_raises_the_queued_error_at_the_op(run_python):
    result = run_python(
        "import torch\n"
        "log_probs = torch.randn(4, 3, device='neuron').log_softmax(-1)\n"
        "targets = torch.tensor([0, 1, 7, 2], device='neuron')\n"
        "try:\n"
        "    torch.nn.functional.nll_loss(log_probs, targets)\n"
        "    print('no error at the op')\n"
        "except RuntimeError as error:\n"
        "    print('raised at the op:', error)\n",
        OPENNEURON_LAUNCH_BLOCKING="1",
        OPENNEURON_DEFERRED_INDEX_CHECKS="1",  # the kernel's own check, run inline
    )
    assert "raised at the op:" in result.stdout and "aten::nll_loss_forward" in result.stdout
