"""Fixes from the nn.utils sweep against torch 2.13: non-Ember inputs to the sequence packing
functions, malformed lengths and PackedSequence data, and pruning argument checks."""

import numpy as np
import pytest
import torch
import torch.nn.utils.prune as tprune
import torch.nn.utils.rnn as trnn

import ember
import ember.nn as nn
import ember.nn.utils.prune as prune
import ember.nn.utils.rnn as ernn
from ember.errors import ArgumentTypeError, ShapeError

FOREIGN = [np.ones(2), torch.ones(2), [1.0, 2.0]]


@pytest.mark.parametrize("bad", FOREIGN, ids=["numpy", "torch", "list"])
@pytest.mark.parametrize("fn", ["pad_sequence", "pack_sequence"])
def test_sequence_functions_refuse_non_ember_tensors(fn, bad):
    with pytest.raises(TypeError, match=f"{fn}\\(\\): argument 'sequences\\[1\\]' must be Tensor"):
        getattr(ernn, fn)([ember.ones(2), bad])
    with pytest.raises(TypeError, match="'sequences\\[0\\]' must be Tensor"):
        getattr(ernn, fn)([bad, bad])


@pytest.mark.parametrize("bad", FOREIGN[:2], ids=["numpy", "torch"])
def test_padded_inputs_refuse_non_ember_tensors(bad):
    with pytest.raises(TypeError, match="pack_padded_sequence\\(\\): argument 'input' must be"):
        ernn.pack_padded_sequence(bad.reshape(2, 1), [2])
    with pytest.raises(TypeError, match="unpad_sequence\\(\\): argument 'padded_sequences'"):
        ernn.unpad_sequence(bad.reshape(2, 1), [2])


def test_two_dimensional_lengths_list_is_a_shape_error():
    x = ember.zeros(4, 3, 2)
    with pytest.raises(RuntimeError):
        trnn.pack_padded_sequence(torch.zeros(4, 3, 2), torch.tensor([[3, 2, 1]]))
    with pytest.raises(ShapeError, match="'lengths' should be a 1-D"):
        ernn.pack_padded_sequence(x, [[3, 2, 1]])


def test_packed_sequence_from_one_tensor_is_refused_not_unpacked():
    with pytest.raises(AssertionError):
        trnn.PackedSequence(torch.ones(2, 3))
    # before: the two rows were taken silently as data and batch_sizes
    with pytest.raises(ArgumentTypeError, match="a \\(data, batch_sizes\\) pair"):
        ernn.PackedSequence(ember.ones(2, 3))
    with pytest.raises(AssertionError, match="PackedSequence: without batch_sizes"):
        ernn.PackedSequence(ember.ones(2, 3))  # before: not an AssertionError, as torch's
    p = ernn.PackedSequence((ember.ones(3), ember.tensor([2, 1])))
    assert p.batch_sizes.tolist() == [2, 1]


def test_prune_amount_bool_is_refused():
    with pytest.raises(TypeError):
        tprune.l1_unstructured(torch.nn.Linear(3, 2), "weight", True)
    with pytest.raises(ArgumentTypeError, match="Invalid type for amount: True"):
        prune.l1_unstructured(nn.Linear(3, 2), "weight", True)


@pytest.mark.parametrize("n", ["fro", "nuc"])
def test_ln_structured_checks_the_norm_even_when_pruning_nothing(n):
    with pytest.raises(RuntimeError, match="matrix_norm"):
        tprune.ln_structured(torch.nn.Conv2d(3, 4, 3), "weight", 0.0, n, 0)
    # before: the message began with linalg.matrix_norm, naming neither ln_structured nor n
    with pytest.raises(ShapeError, match=f"^ln_structured: n='{n}' along dim=0: .*2-tuple"):
        prune.ln_structured(nn.Conv2d(3, 4, 3), "weight", 0.0, n, 0)


def test_ln_structured_names_itself_for_an_unknown_norm():
    from ember.errors import ArgumentError
    with pytest.raises(RuntimeError, match="Order x not supported"):
        tprune.ln_structured(torch.nn.Linear(3, 4), "weight", 1, "x", 0)
    with pytest.raises(ArgumentError, match="^ln_structured: n='x' along dim=0: .*not supported"):
        prune.ln_structured(nn.Linear(3, 4), "weight", 1, "x", 0)


def test_global_unstructured_wants_pairs():
    m = nn.Linear(3, 2)
    with pytest.raises(ArgumentTypeError, match="must hold \\(module, name\\) pairs, got Linear"):
        prune.global_unstructured((m, "weight"), prune.L1Unstructured, amount=1)
    assert not prune.is_pruned(m)


def _split(lib):
    class Split(lib.nn.Module):
        def forward(self, a, b):
            return a + b

        def right_inverse(self, x):
            return x * 0.25, x * 0.75
    return Split()


def test_assigning_to_a_multi_original_parametrization_checks_each_dtype():
    from torch.nn.utils import parametrize as tparametrize

    from ember.nn.utils import parametrize
    t = torch.nn.Linear(4, 4).double()
    tparametrize.register_parametrization(t, "weight", _split(torch))
    with pytest.raises(ValueError, match="dtype"):
        t.weight = torch.ones(3)
    e = nn.Linear(4, 4).to(ember.float64)
    parametrize.register_parametrization(e, "weight", _split(ember))
    with pytest.raises(ValueError, match="right_inverse \\(tensor 0\\) may not change the dtype"):
        e.weight = ember.ones(3)  # before: the originals silently became float32 (3,)
    assert e.parametrizations.weight.original0.dtype == ember.float64
    assert tuple(e.parametrizations.weight.original0.shape) == (4, 4)
    e.weight = ember.ones(4, 4, dtype=ember.float64)
    np.testing.assert_allclose(e.weight.detach().numpy(), np.ones((4, 4)))


def test_assigning_without_right_inverse_is_an_ember_error():
    from ember.errors import OpError
    from ember.nn.utils import parametrize

    class Sym(nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)
    m = parametrize.register_parametrization(nn.Linear(3, 3), "weight", Sym())
    with pytest.raises(OpError, match="Sym does not implement right_inverse"):
        m.weight = ember.ones(3, 3)


def test_total_norm_of_a_numpy_array_is_not_called_sparse():
    with pytest.raises(TypeError):
        torch.nn.utils.get_total_norm([np.ones(3)])
    # before: "sparse gradients are not supported"
    with pytest.raises(TypeError, match="get_total_norm\\(\\): argument 'tensors' must be Tensor"):
        nn.utils.get_total_norm([np.ones(3)])


@pytest.mark.parametrize("norm_type", ["fro", "nuc"])
def test_clip_grad_norm_string_norm_type_is_an_argument_error(norm_type):
    from ember.errors import ArgumentError
    p = nn.Parameter(ember.ones(3))
    p.grad = ember.ones(3)
    with pytest.raises(ValueError):
        torch.nn.utils.get_total_norm([torch.ones(3)], norm_type)
    with pytest.raises(ArgumentError, match=f"norm_type must be a number .*got '{norm_type}'"):
        nn.utils.clip_grad_norm_([p], 1.0, norm_type)


@pytest.mark.parametrize("norm_type", ["inf", "-inf", "3", " 2 "])
def test_clip_grad_norm_takes_a_number_as_a_string_as_pytorch_does(norm_type):
    g = [[3.0, -4.0, 0.5], [1.0, -2.0, 7.0]]
    ep, tp = [], []
    for row in g:
        ep.append(nn.Parameter(ember.zeros(3)))
        ep[-1].grad = ember.tensor(row)
        tp.append(torch.nn.Parameter(torch.zeros(3)))
        tp[-1].grad = torch.tensor(row)
    # before: "inf" was refused with ArgumentError
    total_e = nn.utils.clip_grad_norm_(ep, 1.0, norm_type)
    total_t = torch.nn.utils.clip_grad_norm_(tp, 1.0, norm_type)
    np.testing.assert_allclose(total_e.item(), total_t.item(), rtol=1e-6)
    for e, t in zip(ep, tp):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(nn.utils.get_total_norm([ember.tensor(r) for r in g],
                                                       norm_type).item(), total_t.item(), rtol=1e-6)


def test_clip_grad_norm_none_norm_type_is_an_argument_type_error():
    from ember.errors import ArgumentTypeError
    with pytest.raises(TypeError):
        torch.nn.utils.get_total_norm([torch.ones(3)], None)
    with pytest.raises(ArgumentTypeError, match="norm_type must be a number .*got None"):
        nn.utils.get_total_norm([ember.ones(3)], None)


def test_clip_grad_norm_non_finite_is_an_ember_error():
    from ember.errors import OpError
    p = nn.Parameter(ember.ones(3))
    p.grad = ember.tensor([1.0, float("nan"), 2.0])
    with pytest.raises(OpError, match="non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


@pytest.mark.parametrize("fn", ["xavier_uniform_", "xavier_normal_"])
def test_xavier_on_a_zero_receptive_field_names_the_division(fn):
    from ember.errors import DivisionByZero
    with pytest.raises(ZeroDivisionError):
        getattr(torch.nn.init, fn)(torch.empty(3, 3, 0))
    with pytest.raises(DivisionByZero, match=f"nn.init.{fn}: fan_in \\+ fan_out is 0"):
        getattr(nn.init, fn)(ember.empty(3, 3, 0))


def test_skip_init_errors_are_ember_errors():
    from ember.errors import ArgumentError

    class NoDevice(nn.Module):
        def __init__(self, a):
            super().__init__()
    with pytest.raises(ArgumentTypeError, match="expected a Module class"):
        nn.utils.skip_init(int, 1)
    with pytest.raises(ArgumentError, match="must support a 'device' arg"):
        nn.utils.skip_init(NoDevice, 1)


def test_nn_utils_errors_are_ember_errors():
    import pickle

    from ember.errors import ArgumentError, IndexOutOfRange, OpError
    m = nn.utils.weight_norm(nn.Linear(2, 2))
    with pytest.raises(ArgumentError, match="Cannot register two"):
        nn.utils.weight_norm(m)
    m = nn.utils.spectral_norm(nn.Linear(2, 2))
    with pytest.raises(ArgumentError, match="Cannot register two"):
        nn.utils.spectral_norm(m)
    with pytest.raises(ArgumentError, match="Fusion only for eval"):
        nn.utils.fuse_conv_bn_eval(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2))
    with pytest.raises(ArgumentError, match="Missing key\\(s\\): 'bias'"):
        nn.utils.stateless.functional_call(nn.Linear(2, 2), {"weight": ember.ones(2, 2)},
                                           ember.ones(1, 2), strict=True)
    with pytest.raises(IndexOutOfRange, match="Invalid index 2"):
        prune.ln_structured(nn.Linear(3, 2), "weight", 1, 2, dim=2)
    with pytest.raises(IndexOutOfRange, match="spectral_norm: dim 3"):
        nn.utils.parametrizations.spectral_norm(nn.Linear(3, 2), dim=3)
    m = nn.utils.parametrizations.weight_norm(nn.Linear(2, 2))
    with pytest.raises(OpError, match="Serialization of parametrized modules"):
        pickle.dumps(m)


def test_trunc_normal_negative_std_draws_the_same_law_as_torch():
    # before: every value was the upper bound b
    e = nn.init.trunc_normal_(ember.empty(100_000, dtype=ember.float64), mean=0.5, std=-1.0)
    t = torch.nn.init.trunc_normal_(torch.empty(100_000, dtype=torch.float64), mean=0.5, std=-1.0)
    assert float(e.min()) >= -2.0 and float(e.max()) <= 2.0
    assert abs(float(e.mean()) - float(t.mean())) < 0.02
    assert abs(float(e.std()) - float(t.std())) < 0.02


def test_init_zero_divisors_and_negative_sparse_std_are_named():
    from ember.errors import ArgumentError, DivisionByZero
    with pytest.raises(ZeroDivisionError):
        torch.nn.init.trunc_normal_(torch.empty(3), std=0.0)
    with pytest.raises(DivisionByZero, match="trunc_normal_: std=0"):
        nn.init.trunc_normal_(ember.empty(3), std=0.0)
    with pytest.raises(ZeroDivisionError):
        torch.nn.init.dirac_(torch.empty(4, 3, 3), groups=0)
    with pytest.raises(DivisionByZero, match="dirac_: groups=0"):
        nn.init.dirac_(ember.empty(4, 3, 3), groups=0)
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        torch.nn.init.sparse_(torch.empty(3, 4), 0.5, std=-1.0)
    with pytest.raises(ArgumentError, match="std >= 0.0"):  # before: filled with -N(0, 1)
        nn.init.sparse_(ember.empty(3, 4), 0.5, std=-1.0)


@pytest.mark.parametrize("kwargs, bound", [({"mean": 1e300}, 2.0),
                                           ({"mean": 1e300, "std": 1e-320}, 2.0),
                                           ({"mean": -1e300, "a": -1.0, "b": 3.0}, -1.0)])
def test_trunc_normal_far_past_a_bound_draws_that_bound(kwargs, bound):
    # (was all 0 from cancellation, or an endless loop for std=1e-320)
    w = nn.init.trunc_normal_(ember.empty(5, dtype=ember.float64), **kwargs)
    assert w.tolist() == [bound] * 5
