"""nn.utils corners found by the session-63 sweep, each checked against torch."""

import importlib
import warnings

import numpy as np
import pytest
import torch

import ember


def _outcome(fn):
    """``fn()``'s value as a list, or the exception's base class (TypeError, RuntimeError)."""
    try:
        return fn().tolist()
    except TypeError:
        return TypeError
    except RuntimeError:
        return RuntimeError


@pytest.mark.parametrize("values, dtype, padding_value", [
    ([[1, 2], [3]], "uint8", -1),  # a float -1.0 does not fit uint8 (ember wrapped to 255)
    ([[1, 2], [3, 4]], "uint8", -1),  # checked even when nothing needs padding
    ([[1.0, 2.0], [3.0]], "float16", 1e6),  # (ember padded with inf)
    ([[1, 2], [3]], "int8", 300),
    ([[1, 2], [3]], "int8", -128),
    ([[1, 2], [3]], "int64", 2.7),  # truncated to 2, as torch
    ([[True, False], [True]], "bool", 2),
    ([[1.0, 2.0], [3.0]], "float32", None),  # (ember padded with uninitialised memory)
    ([[1.0, 2.0], [3.0]], "float32", "0"),
    ([[1.0, 2.0], [3.0]], "complex64", 1j),
    ([[1.0, 2.0], [3.0]], "float32", [5.0, 6.0]),
])
def test_pad_sequence_padding_value_is_a_float_that_fits_the_dtype(values, dtype, padding_value):
    def pad(lib):
        seqs = [lib.tensor(v, dtype=getattr(lib, dtype)) for v in values]
        return lambda: lib.nn.utils.rnn.pad_sequence(seqs, padding_value=padding_value)

    assert _outcome(pad(ember)) == _outcome(pad(torch))


@pytest.mark.parametrize("padding_value", [None, [5.0, 6.0], -2.5])
def test_pad_packed_sequence_padding_value_must_be_a_number(padding_value):
    def pad(lib):
        packed = lib.nn.utils.rnn.pack_sequence([lib.ones(3), lib.ones(1)])
        return lambda: lib.nn.utils.rnn.pad_packed_sequence(packed,
                                                            padding_value=padding_value)[0]

    assert _outcome(pad(ember)) == _outcome(pad(torch))


@pytest.mark.parametrize("total_length", [4.0, "4", np.int64(4), 4])
def test_pad_packed_sequence_total_length_must_be_an_int(total_length):
    def pad(lib):
        packed = lib.nn.utils.rnn.pack_sequence([lib.ones(2), lib.ones(1)])
        return lambda: lib.nn.utils.rnn.pad_packed_sequence(packed,
                                                            total_length=total_length)[0]

    assert _outcome(pad(ember)) == _outcome(pad(torch))
    if not isinstance(total_length, (int, np.integer)):  # (was Python's "can't multiply
        # sequence by non-int of type 'float'")
        with pytest.raises(TypeError, match="pad_packed_sequence.*'total_length' must be int"):
            pad(ember)()


def test_spectral_norm_module_holds_the_hook_as_torch():
    # ``from torch.nn.utils.spectral_norm import SpectralNorm`` (GAN code finds the hooks by it)
    # had no Ember module; nn.utils.spectral_norm stays the function
    from ember.nn.utils.spectral_norm import SpectralNorm, remove_spectral_norm, spectral_norm
    from ember.nn.utils.weight_norm import WeightNorm

    assert ember.nn.utils.spectral_norm is spectral_norm
    torch_sn = importlib.import_module("torch.nn.utils.spectral_norm")
    torch_wn = importlib.import_module("torch.nn.utils.weight_norm")
    for lib, hooks in ((ember, [SpectralNorm, WeightNorm]),
                       (torch, [torch_sn.SpectralNorm, torch_wn.WeightNorm])):
        m = lib.nn.utils.spectral_norm(lib.nn.Linear(3, 4))
        with pytest.warns(FutureWarning):
            lib.nn.utils.weight_norm(m, "bias")
        assert [type(h) for h in m._forward_pre_hooks.values()] == hooks
    m = spectral_norm(ember.nn.Linear(3, 4))
    assert list(remove_spectral_norm(m).state_dict()) == ["bias", "weight"]


def test_old_spectral_norm_dim_is_checked_and_may_count_from_the_end():
    m = ember.nn.utils.spectral_norm(ember.nn.Linear(3, 4), dim=-1)  # (torch: a permute error)
    assert (tuple(m.weight_u.shape), tuple(m.weight_v.shape)) == ((3,), (4,))
    with pytest.raises(IndexError, match="spectral_norm: dim 2 is out of range .* \\(4, 3\\)"):
        ember.nn.utils.spectral_norm(ember.nn.Linear(3, 4), dim=2)


@pytest.mark.parametrize("name, hook", [("weight_norm", "WeightNorm"),
                                        ("spectral_norm", "SpectralNorm")])
def test_old_norm_hooks_refuse_a_lazy_module_as_torch(name, hook):
    for lib in (torch, ember):  # (ember: 'Attempted to use an uninitialized parameter in abs')
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            with pytest.raises(ValueError, match=f"`{hook}` can't have uninitialized"):
                getattr(lib.nn.utils, name)(lib.nn.LazyLinear(3))


def test_old_norm_hooks_have_torchs_methods():
    # apply / compute_weight / reshape_weight_to_matrix / remove, and the removal loop user
    # code copies from torch's remove_weight_norm (ember's hooks had none of these)
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype(np.float32)
    results = []
    for lib, src in ((torch, None), (ember, results)):
        sn = importlib.import_module(f"{lib.__name__}.nn.utils.spectral_norm").SpectralNorm
        wn = importlib.import_module(f"{lib.__name__}.nn.utils.weight_norm").WeightNorm
        m = lib.nn.Conv2d(3, 4, 2)
        sn_hook = sn.apply(m, "weight", 2, 1, 1e-12)
        with pytest.warns(FutureWarning):
            wn_hook = wn.apply(m, "bias", None)
        if src is not None:  # the same tensors as torch's
            m.load_state_dict({k: ember.tensor(v.numpy()) for k, v in src[0][0].items()})
        state = {k: v.clone() for k, v in m.state_dict().items()}
        out = m(lib.tensor(x))
        with lib.no_grad():
            weights = [sn_hook.compute_weight(m, do_power_iteration=False),
                       wn_hook.compute_weight(m),
                       sn_hook.reshape_weight_to_matrix(m.weight_orig)]
        for key, hook in list(m._forward_pre_hooks.items()):
            if isinstance(hook, (sn, wn)):
                hook.remove(m)
                del m._forward_pre_hooks[key]
        results.append((state, [out, *weights], m.state_dict(),
                        (sn_hook.dim, sn_hook.n_power_iterations, wn_hook.dim)))
    (_, theirs, their_sd, their_attrs), (_, ours, our_sd, our_attrs) = results
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert list(our_sd) == list(their_sd) == ["weight", "bias"]
    for key in our_sd:
        np.testing.assert_allclose(our_sd[key].numpy(), their_sd[key].numpy(), atol=1e-6)
    assert our_attrs == their_attrs == (1, 2, -1)


def test_stateless_functional_call_takes_torchs_argument_name():
    results = []
    for lib in (torch, ember):  # (ember's took only ember.func's 'parameter_and_buffer_dicts')
        m = lib.nn.Linear(2, 1)
        with pytest.warns(FutureWarning):
            out = lib.nn.utils.stateless.functional_call(
                m, parameters_and_buffers={"weight": lib.ones(1, 2), "bias": lib.zeros(1)},
                args=(lib.tensor([[1.0, 2.0]]),), strict=True)
        results.append(out.tolist())
    assert results[0] == results[1] == [[3.0]]


def test_packed_sequence_cpu_takes_tensor_cpus_arguments():
    for lib in (torch, ember):  # (ember's cpu() took no arguments)
        packed = lib.nn.utils.rnn.pack_sequence([lib.ones(2), lib.ones(1)])
        assert packed.cpu(memory_format=lib.preserve_format) is packed


def test_pad_sequence_takes_a_numpy_bool_padding_value_as_torch():
    t = torch.nn.utils.rnn.pad_sequence([torch.ones(2), torch.ones(1)],
                                        padding_value=np.bool_(True))
    e = ember.nn.utils.rnn.pad_sequence([ember.ones(2), ember.ones(1)],
                                        padding_value=np.bool_(True))
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_packed_sequence_cpu_takes_to_arguments_as_torch():
    t = torch.nn.utils.rnn.pack_sequence([torch.ones(3), torch.ones(2)])
    e = ember.nn.utils.rnn.pack_sequence([ember.ones(3), ember.ones(2)])
    assert str(t.cpu(torch.float64).data.dtype).split(".")[1] == \
        str(e.cpu(ember.float64).data.dtype).split(".")[1]
    assert e.cpu(device="cpu").data.dtype == ember.float32
