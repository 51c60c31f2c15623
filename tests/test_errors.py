"""User errors get clear messages, and the process stays usable after each one."""

import json

import pytest
import torch


def assert_device_still_works() -> None:
    x = torch.arange(4.0).to("neuron")
    torch.testing.assert_close((x * 2 + 1).cpu(), torch.arange(4.0) * 2 + 1, rtol=0, atol=0)


# --- device indices ----------------------------------------------------------------------------

MISSING_DEVICE_CALLS = {
    "factory": lambda: torch.ones(1, device="neuron:7"),
    "to": lambda: torch.ones(1).to("neuron:7"),
    "set_device": lambda: torch.neuron.set_device(7),
    "device_context": lambda: torch.neuron.device(7),
    "accelerator_set_device_index": lambda: torch.accelerator.set_device_index(7),
    "stream": lambda: torch.neuron.Stream(7),
    "memory_allocated": lambda: torch.neuron.memory_allocated(7),
}


@pytest.mark.parametrize("call", MISSING_DEVICE_CALLS.values(), ids=MISSING_DEVICE_CALLS.keys())
def test_missing_device_index_names_the_devices_that_exist(call, restore_device, second_device):
    with pytest.raises(RuntimeError, match="neuron:7|index 7") as raised:
        call()
    assert "neuron:0, neuron:1" in str(raised.value)
    assert torch.neuron.current_device() == 0  # a rejected index does not change the device
    assert_device_still_works()


def test_negative_device_index_is_rejected(restore_device):
    with pytest.raises(RuntimeError, match="neuron:0"):
        torch.neuron.set_device(-1)
    assert_device_still_works()


# --- mixing devices in one op ------------------------------------------------------------------

MIXED_DEVICE_OPS = {
    "add": lambda n, c: n + c,
    "radd": lambda n, c: c + n,
    "mul": lambda n, c: n * c,
    "add_": lambda n, c: n.add_(c),
    "mm": lambda n, c: torch.mm(n, c),
    "mm_reversed": lambda n, c: torch.mm(c, n),
    "matmul": lambda n, c: n @ c,
}


@pytest.mark.parametrize("op", MIXED_DEVICE_OPS.values(), ids=MIXED_DEVICE_OPS.keys())
def test_neuron_and_cpu_tensors_cannot_be_mixed(op):
    on_device, on_host = torch.ones(3, 3, device="neuron"), torch.ones(3, 3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        op(on_device, on_host)
    # The failed in-place op left its operand untouched.
    assert torch.equal(on_device.cpu(), torch.ones(3, 3))
    assert_device_still_works()


def test_tensors_on_two_neuron_devices_cannot_be_mixed(second_device):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(3, device="neuron:0") + torch.ones(3, device=second_device)
    assert_device_still_works()


def test_cpu_zero_dim_tensor_is_allowed_as_a_scalar():
    host = torch.tensor([1.0, -2.0, 3.5])
    on_device = host.to("neuron")
    scale = torch.tensor(2.5)
    for result, expected in (
        (on_device + scale, host + scale),
        (on_device * scale, host * scale),
        (scale - on_device, scale - host),
    ):
        assert result.device == torch.device("neuron", 0)
        torch.testing.assert_close(result.cpu(), expected, rtol=0, atol=0)


# --- invalid configuration ---------------------------------------------------------------------

INVALID_SETTINGS = {
    "OPENNEURON_PROFILE": ("trn9", ["trn2", "trn3"]),
    "OPENNEURON_DEVICES": ("0", ["1 to 64"]),
    "OPENNEURON_HBM_BYTES": ("lots", ["512M", "K, M, G or T"]),
    "OPENNEURON_LAUNCH_BLOCKING": ("maybe", ["1, 0", "true/false"]),
}

# Imports torch with every invalid setting in the environment, then, per setting, forks a child
# (before the runtime exists, so forking is allowed) that keeps only that one setting and uses
# the device for the first time. One interpreter start instead of one per setting.
CONFIG_SCRIPT = """
import json
import os

import torch

settings = sorted(k for k in os.environ if k.startswith("OPENNEURON_"))
results = {}
for variable in settings:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        for other in settings:
            if other != variable:
                del os.environ[other]
        # is_available never raises; it reports no device for an invalid configuration.
        result = {"available": torch.neuron.is_available()}
        try:
            torch.ones(1, device="neuron")
            result["error"] = None
        except RuntimeError as error:
            result["error"] = str(error)
        result["cpu"] = (torch.ones(2) + 1).tolist()
        with os.fdopen(write_end, "w") as out:
            json.dump(result, out)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        results[variable] = json.load(pipe)
    os.waitpid(pid, 0)
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def invalid_setting_results(run_python) -> dict[str, dict]:
    done = run_python(CONFIG_SCRIPT, **{k: value for k, (value, _) in INVALID_SETTINGS.items()})
    # `import torch` itself works with invalid settings in the environment.
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("variable", INVALID_SETTINGS.keys())
def test_invalid_setting_is_reported_on_first_device_use(variable, invalid_setting_results):
    value, accepted = INVALID_SETTINGS[variable]
    result = invalid_setting_results[variable]
    assert result["available"] is False
    message = result["error"]
    assert message is not None, "first device use did not fail"
    assert f"{variable}='{value}'" in message
    assert "accepted values" in message
    for fragment in accepted:
        assert fragment in message
    # CPU work still runs in that process.
    assert result["cpu"] == [2.0, 2.0]


# --- fork after initialisation -----------------------------------------------------------------

FORK_SCRIPT = """
import multiprocessing
import os

import torch

x = torch.ones(3, device="neuron")  # initialises the runtime in the parent


def use_device(queue):
    try:
        torch.ones(1, device="neuron")
        queue.put("no error")
    except RuntimeError as error:
        queue.put(str(error))


pid = os.fork()
if pid == 0:
    try:
        torch.ones(1, device="neuron")
        message = "no error"
    except RuntimeError as error:
        message = str(error)
    # CPU work is still fine in the child.
    cpu_ok = (torch.ones(2) * 3).tolist() == [3.0, 3.0]
    with open(os.environ["FORK_RESULT"], "w") as out:
        out.write(f"{cpu_ok}|{message}")
    os._exit(0)
os.waitpid(pid, 0)
with open(os.environ["FORK_RESULT"]) as result:
    print("OS_FORK", result.read())

context = multiprocessing.get_context("fork")
queue = context.Queue()
child = context.Process(target=use_device, args=(queue,))
child.start()
print("MP_FORK", queue.get(timeout=60))
child.join()

print("PARENT", (x + 1).cpu().tolist())
"""


def test_device_use_in_a_forked_child_asks_for_spawn(run_python, tmp_path):
    done = run_python(FORK_SCRIPT, FORK_RESULT=str(tmp_path / "child.txt"))
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    cpu_ok, os_fork_message = lines["OS_FORK"].split("|", 1)
    assert cpu_ok == "True"
    assert "spawn" in os_fork_message and "fork" in os_fork_message
    assert "spawn" in lines["MP_FORK"]
    # The parent keeps its working device.
    assert lines["PARENT"] == "[2.0, 2.0, 2.0]"


def test_device_still_works_after_every_error_in_this_process(restore_device):
    # A sequence of different failures in one process, then a real computation.
    for call in (
        lambda: torch.ones(1, device="neuron:7"),
        lambda: torch.ones(2, device="neuron") + torch.ones(2),
        lambda: torch.mm(torch.ones(2, 3, device="neuron"), torch.ones(2, 3, device="neuron")),
    ):
        with pytest.raises(RuntimeError):
            call()
    a, b = torch.randn(8, 5), torch.randn(5, 3)
    torch.testing.assert_close((a.to("neuron") @ b.to("neuron")).cpu(), a @ b, rtol=1e-5, atol=1e-5)
