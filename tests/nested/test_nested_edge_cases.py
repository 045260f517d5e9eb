"""Edge cases found in review, each against torch.nested (layout=torch.jagged) or against the
same computation done per sequence on dense tensors."""

import copy as copy_module
import gc
import io
import pickle
import weakref

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.errors import ShapeError
from tests.nested.helpers import arrays, assert_close, pair


def separate(lengths, heads=2, dim=3, seed=0):
    """(B, H, j, D) nested tensors of ``lengths``, each call a new ragged structure, with the
    dense (H, L, D) sequences they hold."""
    data = arrays((heads, dim), lengths, seed)
    nt = ember.nested.nested_tensor([ember.tensor(a) for a in data]).transpose(1, 2)
    return nt, [torch.tensor(a).transpose(0, 1) for a in data]


@pytest.mark.parametrize("q_lengths, kv_lengths, q_heads, is_causal", [
    ((2, 3, 1), (2, 3, 1), 2, False),   # key and value built apart, as torch allows
    ((3, 1, 2), (2, 4, 2), 2, True),    # different query and key lengths, causal
    ((2, 0, 3), (2, 0, 3), 2, False),   # an empty sequence
    ((2, 1), (2, 0), 2, False),         # a query attending to no keys gives zeros
    ((3, 1, 2), (2, 4, 2), 4, False),   # grouped-query attention: 4 query heads, 2 kv heads
])
def test_attention_per_sequence(q_lengths, kv_lengths, q_heads, is_causal):
    q, qs = separate(q_lengths, q_heads, seed=1)
    k, ks = separate(kv_lengths, seed=2)
    v, vs = separate(kv_lengths, seed=3)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal,
                                         enable_gqa=q_heads != 2)
    for got, *dense in zip(out.unbind(), qs, ks, vs):
        want = TF.scaled_dot_product_attention(*dense, is_causal=is_causal,
                                               enable_gqa=q_heads != 2)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_attention_refuses_key_and_value_of_different_lengths():
    q, _ = separate((2, 3))
    v, _ = separate((2, 2))
    with pytest.raises(RuntimeError, match="key .* and value .* lengths"):
        F.scaled_dot_product_attention(q, q, v)


def test_construction_refuses_mixed_dtypes_like_torch():
    parts = [ember.ones(2, 3), ember.ones(1, 3, dtype=ember.float64)]
    for make in (ember.nested.nested_tensor, ember.nested.as_nested_tensor):
        with pytest.raises(TypeError, match=r"one dtype.*float32.*float64.*Hint"):
            make(parts, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(1, 3, dtype=torch.float64)],
                                   layout=torch.jagged, dtype=torch.float64)


def test_equality_is_elementwise_and_truth_is_ambiguous():
    nt, tnt = pair()
    for got, want in ((nt == nt, tnt == tnt), (nt != 0.5, tnt != 0.5),
                      (nt == nt.clone(), tnt == tnt.clone())):
        assert got.dtype is ember.bool
        assert_close(got, want)
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(nt)
    assert len({nt, nt}) == 1  # still hashable, by identity


def test_in_place_ops_write_the_values():
    nt, tnt = pair()
    values = nt.values()
    for x in (nt, tnt):
        assert x.add_(1.5) is x and x.mul_(x) is x and x.sub_(2, alpha=0.5) is x
        assert x.div_(3) is x and x.exp_() is x and x.relu_() is x
        before = x
        x += 1
        x -= 0.25
        x *= 2
        x /= 4
        assert x is before
    assert nt.values() is values
    assert_close(nt, tnt)
    with pytest.raises(RuntimeError, match="leaf"):
        ember.nested.nested_tensor([ember.ones(2)], requires_grad=True).add_(1)


def test_grad_fn_abs_and_integer_indexing():
    nt, tnt = pair(requires_grad=True)
    assert nt.grad_fn is None and (nt * 2).grad_fn is not None
    assert_close(abs(nt), abs(tnt))
    np.testing.assert_array_equal(nt[np.int64(1)].detach().numpy(),
                                  tnt[np.int64(1)].detach().numpy())
    with pytest.raises(NotImplementedError, match="indexing with True"):
        nt[True]


def test_gradcheck_of_a_nested_input_says_to_check_its_values():
    nt, _ = pair(requires_grad=True)
    with pytest.raises(TypeError, match="gradcheck.*nested.*values"):
        ember.autograd.gradcheck(lambda x: (x * x).sum(), (nt,))


def test_compile_and_vmap_refuse_nested_tensors_clearly_and_save_keeps_them():
    nt, _ = pair()
    with pytest.raises(TypeError, match=r"ember.jit: argument x is a NestedTensor.*Hint"):
        ember.compile(lambda x: x * 2)(nt)
    with pytest.raises(ValueError, match=r"vmap\(<lambda>\): .*NestedTensor.*unbind"):
        ember.vmap(lambda x: x * 2)(nt)
    buf = io.BytesIO()
    ember.save(nt, buf)  # its values and offsets, read with weights_only=True as torch's
    buf.seek(0)
    back = ember.load(buf)
    assert all(ember.equal(a, b) for a, b in zip(back.unbind(), nt.unbind()))


def test_pickle_and_deepcopy_keep_the_sequences():
    nt, tnt = pair()
    for copy in (pickle.loads(pickle.dumps(nt)), copy_module.deepcopy(nt)):
        assert_close(copy, tnt)
        assert copy.shape[1] != nt.shape[1] or copy._ragged is nt._ragged


def test_repr_orders_its_fields_like_torch():
    leaf = ember.nested.nested_tensor([ember.ones(2), ember.ones(1)], requires_grad=True)
    assert repr(leaf).endswith("offsets=tensor([0, 2, 3]), requires_grad=True, "
                               "contiguous=True)")
    assert repr(leaf * 2).endswith("offsets=tensor([0, 2, 3]), grad_fn=<MulBackward0>, "
                                   "contiguous=True)")


@pytest.mark.parametrize("shapes", [((2, 3), (2, 4)), ((2, 3, 5), (2, 1, 5)), ((2, 3), (3, 3))])
def test_components_ragged_in_another_dimension_like_torch(shapes):
    data = [np.arange(np.prod(s), dtype=np.float64).reshape(s) for s in shapes]
    for make, tmake in ((ember.nested.nested_tensor, torch.nested.nested_tensor),
                        (ember.nested.as_nested_tensor, torch.nested.as_nested_tensor)):
        nt = make([ember.tensor(a) for a in data])
        tnt = tmake([torch.tensor(a) for a in data], layout=torch.jagged)
        assert nt._ragged_idx == tnt._ragged_idx
        assert_close(nt, tnt)
        np.testing.assert_array_equal(nt.to_padded_tensor(-1.0).numpy(),
                                      tnt.to_padded_tensor(-1.0).numpy())


def test_components_ragged_in_two_dimensions_are_refused():
    with pytest.raises(ShapeError, match=r"one ragged dimension.*\(2, 3\), \(3, 4\)"):
        ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(3, 4)])


def test_attention_refuses_a_dense_query_with_nested_keys():
    q, _ = separate((2, 3))
    with pytest.raises(TypeError, match=r"all be nested.*Tensor, NestedTensor, NestedTensor"):
        F.scaled_dot_product_attention(ember.ones(2, 2, 3, 3, dtype=ember.float64), q, q)


def _int_pair():
    data = [np.array([[1, -2], [3, 0]]), np.array([[5, 6]])]
    return (ember.nested.nested_tensor([ember.tensor(a) for a in data]),
            torch.nested.nested_tensor([torch.tensor(a) for a in data], layout=torch.jagged))


def test_invert_and_bitwise_not_as_torch():
    nt, tnt = _int_pair()
    assert_close(~nt, ~tnt)
    assert_close(ember.bitwise_not(nt), torch.bitwise_not(tnt))
    assert_close(~(nt > 0), ~(tnt > 0))
    with pytest.raises(ember.errors.DTypeError, match="bitwise_not"):
        ~nt.float()


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "softmin"])
def test_softmax_of_an_int_nested_tensor_over_the_ragged_dim_names_the_dtype(op):
    nt, _ = _int_pair()
    with pytest.raises(ember.errors.DTypeError, match=f"^{op}: expected a floating input, got "
                                                      "int64"):
        getattr(F, op)(nt, 1)  # (was full's 'the value -inf cannot be converted to int64')
    got = getattr(F, op)(nt, 1, dtype=ember.float64)
    want = getattr(F, op)(nt.double(), 1)
    assert_close(got, want)


def test_softmax_dtype_over_the_ragged_dim_as_torch():
    nt, tnt = pair()
    got = F.softmax(nt.float(), 1, dtype=ember.float64)
    want = TF.softmax(tnt.float(), 1, dtype=torch.float64)
    assert got.dtype is ember.float64
    assert_close(got, want, rtol=1e-6)


def test_nelement_and_element_size_as_torch():
    nt, tnt = pair()
    assert nt.nelement() == tnt.nelement() == nt.numel()
    assert nt.element_size() == tnt.element_size()
    assert nt.float().element_size() == tnt.float().element_size()


def test_tensor_queries_and_conversions_as_torch():
    """cpu(), is_cpu/is_cuda, is_floating_point/is_complex, to(other nested), frac (each
    raised 'not supported')."""
    nt, tnt = pair()
    assert_close(nt.cpu(), tnt.cpu())
    assert (nt.is_cpu, nt.is_cuda) == (tnt.is_cpu, tnt.is_cuda) == (True, False)
    assert nt.is_floating_point() and not nt.long().is_floating_point()
    assert not nt.is_complex()
    got, want = nt.float().to(nt), tnt.float().to(tnt)
    assert got.dtype is ember.float64 and want.dtype is torch.float64
    assert_close(got, want)
    assert_close(nt.frac(), tnt.frac())
    assert_close(ember.frac(nt), torch.frac(tnt))


def test_retain_grad_of_a_non_leaf_as_torch():
    nt, tnt = pair(requires_grad=True)
    got, want = nt * 3, tnt * 3
    assert got.retain_grad() is None and want.retain_grad() is None
    (got.exp().values() * 2).sum().backward()
    (want.exp().values() * 2).sum().backward()
    assert_close(got.grad, want.grad)


@pytest.mark.parametrize("op,call", [
    ("cosine_similarity", lambda nt: F.cosine_similarity(nt, nt, dim=-1)),
    ("mse_loss", lambda nt: F.mse_loss(nt, ember.ones(4, dtype=ember.float64))),
    ("group_norm", lambda nt: F.group_norm(nt, 2)),  # (was "unsupported operand type(s) for
])                                                   # %: 'RaggedDim' and 'int'")
def test_a_ragged_size_met_inside_an_op_names_the_op(op, call):
    nt, _ = pair()
    with pytest.raises(TypeError, match=f"^{op}: the ragged dimension j\\d+ .*no single size"):
        call(nt)
    with pytest.raises(TypeError, match="^the ragged dimension"):  # (no op: the plain message)
        int(nt.size(1))


def test_autograd_grad_with_respect_to_a_nested_tensor_as_torch():
    """(ember.autograd.grad read the nested input as the list of its sequences: 'input 0
    (shape (2, 4)) was not used to compute the outputs')."""
    nt, tnt = pair(requires_grad=True)
    (got,) = ember.autograd.grad((nt * nt * nt).sum(), nt, create_graph=True)
    (want,) = torch.autograd.grad((tnt * tnt * tnt).sum(), tnt, create_graph=True)
    assert got.is_nested
    assert_close(got, want)
    (got2,) = ember.autograd.grad((got.values() ** 2).sum(), [nt])  # second order
    (want2,) = torch.autograd.grad((want.values() ** 2).sum(), [tnt])
    assert_close(got2, want2)


def test_autograd_grad_of_a_nested_output_with_mixed_inputs():
    nt, tnt = pair(requires_grad=True)
    w = ember.tensor([1.0, -2.0, 0.5, 3.0], dtype=ember.float64, requires_grad=True)
    tw = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64, requires_grad=True)
    out, tout = (nt * w).sin(), (tnt * tw).sin()
    got = ember.autograd.grad(out, (w, nt), grad_outputs=nt.detach() * 2)
    want = torch.autograd.grad(tout, (tw, tnt), grad_outputs=tnt.detach() * 2)
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])
    with pytest.raises(ShapeError, match="different ragged structures"):
        ember.autograd.grad((nt * 2), nt, grad_outputs=pair()[0])


def test_setting_grad_to_none_as_torch():
    nt, tnt = pair(requires_grad=True)
    (nt * 2).sum().backward()
    (tnt * 2).sum().backward()
    nt.grad, tnt.grad = None, None
    assert nt.grad is None and tnt.grad is None
    (nt * 3).sum().backward()
    (tnt * 3).sum().backward()
    assert_close(nt.grad, tnt.grad)


def test_softmax_without_dim_takes_the_implicit_dim_as_torch():
    """(raised 'nested tensors need an explicit dim'; torch picks dim 1 of a 4-d one)."""
    nt, tnt = pair((2, 3))
    with pytest.warns(UserWarning, match="Implicit dimension"):
        got = F.softmax(nt)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        want = TF.softmax(tnt)
    assert_close(got, want)
    three, _ = pair()
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="batch dimension"):
        F.log_softmax(three)  # (dim 0 of a 3-d one: the batch dimension, as torch refuses)


def test_int32_offsets_are_kept_and_shared_as_torch():
    """(from_jagged made an int64 copy of int32 offsets: each nested tensor built on them got
    its own ragged size, so a + b raised 'different ragged structures')."""
    values = np.random.default_rng(2).standard_normal((5, 3))
    off, toff = ember.tensor([0, 2, 2, 5], dtype=ember.int32), torch.tensor([0, 2, 2, 5],
                                                                           dtype=torch.int32)
    a, b = (ember.nested.nested_tensor_from_jagged(ember.tensor(v), off)
            for v in (values, values * 2))
    ta, tb = (torch.nested.nested_tensor_from_jagged(torch.tensor(v), toff)
              for v in (values, values * 2))
    assert a.offsets().dtype is ember.int32 and ta.offsets().dtype is torch.int32
    assert a.shape[1] == b.shape[1]
    assert_close(a + b, ta + tb)
    assert_close(a.softmax(1), ta.softmax(1))
    assert_close(a.sum(1), ta.sum(1))


@pytest.mark.parametrize("seqlens", [{"max_seqlen": 2}, {"min_seqlen": 2},
                                     {"min_seqlen": 5, "max_seqlen": 1}])
def test_seqlens_that_do_not_bound_the_rows_are_refused(seqlens):
    """(review56g item 6: they were kept, and to_padded_tensor/softmax(1) then raised a bare
    NumPy IndexError; torch keeps them as unchecked hints and truncates)."""
    off = ember.tensor([0, 1, 3, 6])
    with pytest.raises(ember.errors.ArgumentError, match="must bound the rows"):
        ember.nested.nested_tensor_from_jagged(ember.zeros(6, 2), off, **seqlens)
    nt = ember.nested.nested_tensor_from_jagged(ember.zeros(6, 2), off, min_seqlen=1,
                                                max_seqlen=7)  # (a larger one pads further)
    assert nt.to_padded_tensor(0.0).shape == (3, 7, 2)


def test_seqlen_hints_keep_the_ragged_size_of_the_offsets():
    # nested tensors on one offsets tensor share one j whatever max_seqlen hint each got, and
    # combine, as in torch (ember made a new j per hint: "different ragged structures")
    data = np.arange(12.0).reshape(6, 2)
    off, toff = ember.tensor([0, 2, 6]), torch.tensor([0, 2, 6])
    a = ember.nested.nested_tensor_from_jagged(ember.tensor(data), off)
    b = ember.nested.nested_tensor_from_jagged(ember.tensor(data) * 2, off, max_seqlen=7)
    ta = torch.nested.nested_tensor_from_jagged(torch.tensor(data), toff)
    tb = torch.nested.nested_tensor_from_jagged(torch.tensor(data) * 2, toff, max_seqlen=7)
    assert a.shape == b.shape and a.is_same_size(b) and ta.is_same_size(tb)
    assert_close(a * b, ta * tb)
    assert_close(a.transpose(1, 2) @ b, ta.transpose(1, 2) @ tb)
    assert_close(b.transpose(1, 2) @ a, tb.transpose(1, 2) @ ta)
    assert b.to_padded_tensor(0.0).shape == (2, 7, 2)  # (each keeps its own hint)


def test_the_ragged_size_lives_as_long_as_the_offsets_and_hints_stay_per_tensor():
    # the j of an offsets tensor outlives the hinted nested tensor that made it last (a tensor
    # built after one with a hint was gc'd got a new j: "different ragged structures"), and a
    # tensor built with no hint pads to its longest row, not to an earlier tensor's hint
    data = np.sin(np.arange(24.0)).reshape(6, 4)
    off, toff = ember.tensor([0, 1, 3, 6]), torch.tensor([0, 1, 3, 6])

    def jagged(lib, o, **hints):
        return lib.nested.nested_tensor_from_jagged(lib.tensor(data), o, **hints)

    a, ta = jagged(ember, off), jagged(torch, toff)
    b, tb = jagged(ember, off, max_seqlen=10), jagged(torch, toff, max_seqlen=10)
    a2 = jagged(ember, off)
    assert a2.to_padded_tensor(0.0).shape == (3, 3, 4)  # (was (3, 10, 4), b's hint)
    assert b.to_padded_tensor(0.0).shape == tb.to_padded_tensor(0.0).shape == (3, 10, 4)
    assert (b + a).to_padded_tensor(0.0).shape == (tb + ta).to_padded_tensor(0.0).shape
    assert_close(ember.where(b > 0, a, b), torch.where(tb > 0, ta, tb))
    assert_close(ember.cat([a, b], -1), torch.cat([ta, tb], -1))
    assert_close(b @ ember.ones(4, 2, dtype=ember.float64), tb @ torch.ones(4, 2).double())
    q, k = a.unflatten(-1, (2, 2)).transpose(1, 2), b.unflatten(-1, (2, 2)).transpose(1, 2)
    tq, tk = ta.unflatten(-1, (2, 2)).transpose(1, 2), tb.unflatten(-1, (2, 2)).transpose(1, 2)
    assert_close(F.scaled_dot_product_attention(q, k, k).transpose(1, 2),
                 TF.scaled_dot_product_attention(tq, tk, tk).transpose(1, 2))
    del b, tb, a2, k, tk
    gc.collect()
    c, tc = jagged(ember, off, min_seqlen=1), jagged(torch, toff, min_seqlen=1)
    assert c.shape[1] is a.shape[1]
    assert_close(a + c, ta + tc)
    freed = weakref.ref(off)
    del a, c, q, off
    gc.collect()
    assert freed() is None  # (the registry keeps no offsets alive)
