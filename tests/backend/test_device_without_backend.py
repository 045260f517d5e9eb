"""A device type this build has no backend for (cuda, mps …) is made, compared and printed as
torch's is on a CPU-only machine; only allocating or computing on it fails, clearly."""
import pickle

import pytest
import torch

import ember


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_made_with_type_index_and_comparisons(lib):
    d = lib.device("cuda:0")
    assert (d.type, d.index, str(d), repr(d)) == ("cuda", 0, "cuda:0",
                                                  "device(type='cuda', index=0)")
    assert lib.device("cuda", 0) == d and lib.device("cuda") != d
    assert lib.device("cuda") != "cuda" and len({lib.device("cuda"), lib.device("cuda")}) == 1
    assert (lib.device("mps").type, lib.device("xpu", 1).index) == ("mps", 1)
    assert pickle.loads(pickle.dumps(lib.device("cuda:1"))) == lib.device("cuda:1")
    assert isinstance(d, lib.device) and not isinstance("cuda", lib.device)
    device = lib.device("cuda" if lib.cuda.is_available() else "cpu")
    assert lib.zeros(1, device=device).device == lib.device("cpu")


@pytest.mark.parametrize("use", [
    lambda lib: lib.zeros(2, device="cuda"),
    lambda lib: lib.tensor([1.0], device=lib.device("cuda:0")),
    lambda lib: lib.ones(2).to("cuda"),
    lambda lib: lib.nn.Linear(2, 2).to(lib.device("cuda")),
    lambda lib: lib.ones(2).cuda(),
    lambda lib: lib.Generator(device="cuda"),
    lambda lib: lib.randn(2, device="cuda"),
    lambda lib: lib.rand(2, 3, device="cuda:0"),
    lambda lib: lib.randint(0, 5, (2,), device="cuda"),
    lambda lib: lib.randperm(4, device="cuda"),
    lambda lib: lib.normal(0.0, 1.0, (2,), device="cuda"),
    lambda lib: lib.randn_like(lib.ones(2), device="cuda"),
], ids=["zeros", "tensor", "to", "module.to", "cuda()", "Generator", "randn", "rand", "randint",
        "randperm", "normal", "randn_like"])
@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_allocating_on_it_fails(lib, use):
    with pytest.raises((AssertionError, RuntimeError)):  # (torch: RuntimeError for Generator)
        use(lib)


def test_the_error_names_the_device_and_a_hint():
    with pytest.raises(ember.DeviceError, match=r"device 'cuda:1': this build of Ember has no "
                       r"cuda backend.*Hint: .*ember.cuda.is_available\(\)"):
        ember.zeros(2, device="cuda:1")
    with pytest.raises(ember.DeviceError, match="to: device 'mps'.*ember.mps.is_available"):
        ember.ones(2).to("mps")
    with ember.device("cuda"), pytest.raises(ember.backend.DeviceUnavailableError):
        ember.zeros(1)
    with ember.device("cuda"), pytest.raises(ember.DeviceError, match="randn: device 'cuda'"):
        ember.randn(1)
    assert ember.zeros(1).device == ember.device("cpu")


def test_bad_device_strings_are_errors():
    for bad in ("foo", "cuda:x", "cuda:-1"):
        with pytest.raises(ember.DeviceError, match="device"):
            ember.device(bad)
    with pytest.raises(ember.DeviceError, match="must not include an index"):
        ember.device("cuda:0", 1)
