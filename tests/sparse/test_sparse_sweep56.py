"""Fixes from the differential sweep of session 56 against torch.sparse (/work/fuzz/sparse56)
and its review (/work/fuzz/review56c), each vs torch 2.13: ``dense.mul_(sparse)``; operators
with no sparse kernel (``%``, ``&``, ``~``, ``<<``, ``2 // s``, ...) naming the op and layout;
``s @ list``; sparse module buffers (state_dict, load, copy_'s sparse dims, functional_call);
``zeros_like``/``empty_like``/``ones_like``/``full_like`` of sparse tensors; ``F.linear`` with a
sparse weight; sparse tensors on one values tensor keeping their own ``requires_grad``."""

import operator
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError
from ember.sparse.tensor import SparseUnsupported

warnings.filterwarnings("ignore", message="Sparse")

INDEX, VALUES = [[0, 1, 1, 0], [1, 2, 2, 1]], [1.0, 2.0, 3.0, -4.0]


def _pair(layout="coo"):
    out = []
    for m in (torch, ember):
        s = m.sparse_coo_tensor(INDEX, VALUES, (2, 3), dtype=m.float64)
        if layout == "coalesced":
            s = s.coalesce()
        out.append((m, s, m.arange(6.0, dtype=m.float64).reshape(2, 3) + 1))
    return out


@pytest.mark.parametrize("layout", ["coo", "coalesced"])
@pytest.mark.parametrize("write", [lambda d, s: d.mul_(s), operator.imul])
def test_dense_mul_sparse_in_place_writes_the_dense_product(layout, write):
    (_, ts, td), (_, es, ed) = _pair(layout)
    want, got = write(td.clone(), ts), write(ed.clone(), es)
    assert isinstance(got, ember.Tensor) and got.layout is ember.strided
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_dense_mul_sparse_in_place_gradient():
    (_, ts, td), (_, es, ed) = _pair()
    grads = []
    for s, d in ((ts, td), (es, ed)):
        x = d.clone().requires_grad_()
        y = x * 1
        y.mul_(s)
        (y ** 2).sum().backward()
        grads.append(x.grad.to_dense().numpy())  # (torch's x.grad is sparse here)
    np.testing.assert_allclose(grads[1], grads[0])

    def f(x):
        y = x * 1
        y.mul_(es)
        return y
    assert ember.autograd.gradcheck(f, (ed.clone().requires_grad_(),))


def test_dense_mul_sparse_in_place_refuses_what_does_not_fit():
    _, (_, es, ed) = _pair()
    with pytest.raises(ShapeError, match="mul_: the result has shape"):
        ed[:1].clone().mul_(es)  # (torch: "expected 'self' and 'other' to have same size")
    with pytest.raises(DTypeError, match="mul_: the result type float64 cannot be cast"):
        ed.long().mul_(es)


@pytest.mark.parametrize("op, call", [
    ("remainder", lambda s: s % 2), ("remainder", lambda s: 2 % s),
    ("bitwise_and", lambda s: s.bool() & s.bool()), ("bitwise_or", lambda s: s.bool() | True),
    ("bitwise_xor", lambda s: True ^ s.bool()), ("bitwise_not", lambda s: ~s.bool()),
    ("bitwise_left_shift", lambda s: s.long() << 1),
    ("bitwise_right_shift", lambda s: 1 >> s.long()), ("pow", lambda s: 2 ** s),
])
@pytest.mark.parametrize("layout", ["coalesced", "csr"])
def test_unsupported_operators_name_the_op_and_layout(op, call, layout):
    # torch: NotImplementedError "Could not run 'aten::remainder.Tensor' with arguments from
    # the 'SparseCPU' backend"; Ember raised "unsupported operand type(s) for %"
    s = ember.sparse_coo_tensor(INDEX, VALUES, (2, 3)).coalesce()
    s = s.to_sparse_csr() if layout == "csr" else s
    with pytest.raises(SparseUnsupported, match=rf"^{op}: not supported for ember.sparse_"
                                                r".*Hint: call .to_dense\(\)"):
        call(s)
    with pytest.raises(TypeError):  # (still a TypeError, as Python's own)
        call(s)


@pytest.mark.parametrize("call", [lambda s: 2 // s, lambda s: s // ember.ones(3),
                                  lambda s: ember.floor_divide(ember.ones(2, 3), s)])
def test_number_floor_divided_by_sparse_is_refused_as_torch(call):
    # torch: "Sparse floor division requires ..." (review56c item 7: Ember's named div)
    s = ember.sparse_coo_tensor(INDEX, VALUES, (2, 3))
    with pytest.raises(ShapeError, match="floor_divide: sparse floor division requires a "
                                         r"scalar or zero-dim dense tensor divisor \(got shape "):
        call(s)


@pytest.mark.parametrize("call", [lambda s, x: s @ x, lambda s, x: ember.sparse.mm(s, x),
                                  lambda s, x: ember.matmul(s, x)])
def test_sparse_times_a_list_is_a_type_error(call):
    s = ember.sparse_coo_tensor(INDEX, VALUES, (2, 3))
    with pytest.raises(ArgumentTypeError, match="mat2 must be a dense or sparse tensor, got "
                                                "list. Hint"):
        call(s, [[1.0], [2.0], [3.0]])


def _adjacency_model(m):
    adj = m.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], (3, 3)).coalesce()

    class Graph(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("adj", adj)

        def forward(self, x):
            return m.sparse.mm(self.adj, x)
    return Graph


def test_sparse_buffer_in_a_module_as_torch(tmp_path):
    # Ember refused it: "cannot assign 'SparseTensor' object to buffer 'adj' (ember Tensor
    # or None required)"; torch keeps sparse buffers (a graph's adjacency matrix)
    import copy
    seen = []
    for m in (torch, ember):
        graph = _adjacency_model(m)
        a, b = graph(), graph()
        b.adj = m.sparse_coo_tensor([[0], [0]], [9.0], (3, 3)).coalesce()
        b.load_state_dict(a.state_dict())
        m.save(a.state_dict(), tmp_path / f"{m.__name__}.pt")
        c = graph()
        c.load_state_dict(m.load(tmp_path / f"{m.__name__}.pt"))
        d = copy.deepcopy(b.double())
        seen.append([list(a.state_dict()), a.state_dict()["adj"].layout == m.sparse_coo,
                     b.adj.to_dense().tolist(), c.adj.to_dense().tolist(),
                     str(d.adj.dtype)[-7:], d.adj is not b.adj,
                     a(m.ones(3, 2)).tolist(), a.to("meta").adj.is_meta])
    assert seen[1] == seen[0]


def test_functional_call_with_a_sparse_buffer_as_torch():
    # review56c item 4: "functional_call: the value for 'adj' must be a tensor (or None), got
    # SparseTensor"; torch.func.functional_call takes it
    seen = []
    for m in (torch, ember):
        g = _adjacency_model(m)()
        other = m.sparse_coo_tensor([[0, 2], [0, 1]], [5.0, 7.0], (3, 3)).coalesce()
        x = m.arange(6.0).reshape(3, 2)
        seen.append([m.func.functional_call(g, dict(g.named_buffers()), (x,)).tolist(),
                     m.func.functional_call(g, ({}, {"adj": other}), (x,)).tolist(),
                     g.adj.to_dense().tolist()])
    assert seen[1] == seen[0]


def test_copy_into_a_sparse_tensor_keeps_its_sparse_dims_as_torch():
    # review56c item 5: a hybrid entry of the same shape changed a COO buffer's sparse_dim
    # from 2 to 1 silently; torch refuses a non-empty tensor's (an empty one may change)
    seen = []
    for m in (torch, ember):
        g = _adjacency_model(m)()
        hybrid = m.eye(3).to_sparse(1)
        with pytest.raises(RuntimeError, match=r"changing the number of sparse dimensions "
                                               r"\(from 2 to 1\) on a non-empty"):
            g.load_state_dict({"adj": hybrid})
        with pytest.raises(RuntimeError, match=r"\(from 1 to 2\) on a non-empty"):
            hybrid.clone().copy_(g.adj)
        empty = m.zeros(3, 3).to_sparse().copy_(hybrid)
        seen.append([g.adj.sparse_dim(), empty.sparse_dim(), empty.to_dense().tolist()])
    assert seen[1] == seen[0]


def test_sparse_buffer_load_refuses_another_layout():
    graph = _adjacency_model(ember)
    g = graph()
    with pytest.raises(RuntimeError, match='copying the parameter named "adj": the '
                                           "checkpoint's ember.strided tensor cannot be copied "
                                           "into the model's ember.sparse_coo one"):
        g.load_state_dict({"adj": g.adj.to_dense()})
    with pytest.raises(RuntimeError, match="size mismatch for adj"):
        g.load_state_dict({"adj": ember.eye(2).to_sparse()})
    g.load_state_dict({"adj": ember.eye(3).to_sparse()}, assign=True)  # (assign takes it)
    assert g.adj.to_dense().tolist() == ember.eye(3).tolist()
    g.share_memory()  # (its parts; torch: "Cannot access storage of SparseTensorImpl")
    assert g.adj._values().is_shared()


def _parts(z, m):
    if z.layout == m.strided:
        return ["dense", z.tolist()]
    index = ([z._indices()] if z.layout == m.sparse_coo else
             [z.crow_indices(), z.col_indices()] if z.layout in (m.sparse_csr, m.sparse_bsr)
             else [z.ccol_indices(), z.row_indices()])
    values = z._values() if z.layout == m.sparse_coo else z.values()
    return [str(z.layout).split(".")[1], str(z.dtype).split(".")[1], tuple(z.shape),
            [i.tolist() for i in index], tuple(values.shape), values.tolist(), z.requires_grad,
            z.is_coalesced() if z.layout == m.sparse_coo else None]


@pytest.mark.parametrize("call", [
    lambda m, s, r, b: m.zeros_like(s), lambda m, s, r, b: m.empty_like(s)._nnz(),
    lambda m, s, r, b: m.zeros_like(s.coalesce(), dtype=m.float64, requires_grad=True),
    lambda m, s, r, b: m.zeros_like(m.ones(2, 3, 4).to_sparse(1)),
    lambda m, s, r, b: m.zeros_like(r), lambda m, s, r, b: m.zeros_like(r.to_sparse_csc()),
    lambda m, s, r, b: m.zeros_like(b), lambda m, s, r, b: m.ones_like(r),
    lambda m, s, r, b: m.ones_like(b, dtype=m.float64), lambda m, s, r, b: m.full_like(r, 7),
    lambda m, s, r, b: m.full_like(r.long(), 2.5),
    lambda m, s, r, b: m.zeros_like(s, layout=m.strided),
    lambda m, s, r, b: m.ones_like(s, layout=m.strided),
    lambda m, s, r, b: m.zeros_like(s, layout=m.sparse_csr),
    lambda m, s, r, b: m.zeros_like(r, layout=m.sparse_coo),
])
def test_zeros_like_of_a_sparse_tensor_as_torch(call):
    # Ember refused them all ("zeros_like: not supported for ember.sparse_coo tensors")
    seen = []
    for m in (torch, ember):
        s = m.sparse_coo_tensor(INDEX, VALUES, (2, 3))
        z = call(m, s, s.coalesce().to_sparse_csr(), m.ones(4, 4).to_sparse_bsr(2))
        seen.append(z if isinstance(z, int) else _parts(z, m))
    assert seen[1] == seen[0]


@pytest.mark.parametrize("layout", ["csr", "csc", "bsr"])
def test_empty_like_of_a_compressed_tensor_keeps_its_pattern_as_torch(layout):
    # review56c item 2: Ember gave no entries, so out.values().copy_(...) raised ShapeError
    seen = []
    for m in (torch, ember):
        d = m.tensor([[2.0, 0.0, 0.0, 1.0], [0.0, 3.0, 0.0, 0.0]])
        s = d.to_sparse_bsr(2) if layout == "bsr" else getattr(d, f"to_sparse_{layout}")()
        out = m.empty_like(s, dtype=m.float64)
        out.values().copy_(s.values() * 2)
        seen.append(_parts(out, m))
    assert seen[1] == seen[0]


def test_sparse_tensors_on_one_values_tensor_have_their_own_requires_grad():
    # review56c item 3: the constructors kept ``values`` itself, so a.requires_grad_() also
    # set b's and v's flag (and two loaded tensors on the same parts were tied); memory shared
    seen = []
    for m in (torch, ember):
        v = m.tensor([1.0, 2.0])
        a = m.sparse_coo_tensor([[0, 1], [1, 0]], v, (2, 2))
        b = m.sparse_csr_tensor([0, 1, 2], [1, 0], v, (2, 2))
        a.requires_grad_()
        v.mul_(3)
        seen.append([b.requires_grad, v.requires_grad, a.to_dense().tolist(),
                     b.to_dense().tolist()])
    assert seen[1] == seen[0]


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_a_sparse_tensor_on_values_that_require_grad_is_a_non_leaf_as_torch(layout):
    # review56m4 item 1: S was a leaf sharing x, so S.requires_grad_(False) turned off
    # x.requires_grad (and that of every sparse tensor on x); torch refuses a non-leaf
    def build(m, x):
        if layout == "coo":
            return m.sparse_coo_tensor([[0, 1], [1, 0]], x, (2, 2))
        return m.sparse_csr_tensor([0, 1, 2], [1, 0], x, (2, 2))
    for m in (torch, ember):
        x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
        s, other = build(m, x), build(m, x)
        assert not s.is_leaf and s.grad_fn is not None and s.requires_grad
        with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
            s.requires_grad_(False)
        assert x.requires_grad and other.requires_grad and s.requires_grad
    w = ember.tensor([[0.5, -1.0], [2.0, 3.0]], dtype=ember.float64)
    assert gradcheck(lambda x: (build(ember, x).to_dense() ** 2 * w).sum(),
                     (ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True),))


def test_like_of_a_coo_tensor_refuses_a_memory_format_as_torch():
    # review56c item 6: memory_format= was taken and ignored
    s = ember.sparse_coo_tensor(INDEX, VALUES, (2, 3))
    t = torch.sparse_coo_tensor(INDEX, VALUES, (2, 3))
    for fmt in ("contiguous_format", "channels_last"):
        with pytest.raises(RuntimeError, match="memory format option is only supported by "
                                               "strided tensors"):
            torch.zeros_like(t, memory_format=getattr(torch, fmt))
        with pytest.raises(ArgumentError, match="zeros_like: memory format option is only "
                                                "supported by strided tensors"):
            ember.zeros_like(s, memory_format=getattr(ember, fmt))
    r = ember.eye(2).to_sparse_csr()  # (a compressed result takes this one, as torch's)
    assert ember.zeros_like(r, memory_format=ember.contiguous_format).layout is ember.sparse_csr


@pytest.mark.parametrize("op", ["empty_like", "ones_like"])
def test_like_of_a_compressed_tensor_checks_a_memory_format_rank_as_torch(op):
    # review56m4 item 3: a compressed result took channels_last unchecked (torch: "required
    # rank 4 tensor to use channels_last format", as Ember's dense empty_like refuses it)
    for m in (torch, ember):
        c = m.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse_csr()
        for fmt in ("channels_last", "channels_last_3d"):
            with pytest.raises(RuntimeError, match="rank|needs a [45]-d tensor"):
                getattr(m, op)(c, memory_format=getattr(m, fmt))
        assert getattr(m, op)(c, memory_format=m.contiguous_format).layout is m.sparse_csr
    with pytest.raises(ShapeError, match="zeros_like: memory format channels_last needs a 4-d"):
        ember.zeros_like(c, memory_format=ember.channels_last)  # (torch's zeros_like takes it)


def test_ones_like_of_a_coo_tensor_is_refused_as_torch():
    s = ember.sparse_coo_tensor(INDEX, VALUES, (2, 3))
    for call in (ember.ones_like, lambda s: ember.full_like(s, 2)):
        with pytest.raises(SparseUnsupported, match="_like: not supported for ember.sparse_coo"):
            call(s)  # (torch: "Could not run 'aten::fill_.Scalar' ... 'SparseCPU' backend")


def test_like_of_a_compressed_tensor_in_the_strided_layout_is_dense():
    # torch refuses: "empty_like with different sparse layout is not supported (self is
    # SparseCsr but you requested Strided)"; Ember gives the dense tensor, as for COO
    r = ember.eye(2).to_sparse_csr()
    assert ember.ones_like(r, layout=ember.strided).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert ember.zeros_like(r, layout=ember.strided).layout is ember.strided


def test_like_of_a_nested_tensor_in_its_own_layout_still_works():
    # the layout reaches a tensor-like's handler only where it differs from the tensor's
    # (ff8fcc7c passed layout=ember.jagged on: "zeros_like: makes dense tensors only")
    nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(1, 3)], layout=ember.jagged)
    assert type(ember.zeros_like(nt, layout=ember.jagged)) is type(nt)


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("shape", [(2, 4, 3), (4, 3), (3,)])
def test_linear_with_a_sparse_weight_as_torch(layout, shape):
    # Ember refused it ("linear: not supported for sparse tensors"); torch computes it
    rs = np.random.RandomState(0)
    x_np, w_np = rs.randn(*shape), rs.randn(2, 3)
    w_np[0, 1] = 0.0  # (unspecified: torch's w.grad has it there, Ember's is masked)
    seen = []
    for m in (torch, ember):
        x = m.tensor(x_np, requires_grad=True)
        w = m.tensor(w_np).to_sparse() if layout == "coo" else m.tensor(w_np).to_sparse_csr()
        w.requires_grad_()
        out = m.nn.functional.linear(x, w)
        (out ** 2).sum().backward()
        seen.append((out.detach().numpy(), x.grad.numpy(), w.grad.to_dense().numpy()))
    (t_out, t_gx, t_gw), (e_out, e_gx, e_gw) = seen
    np.testing.assert_allclose(e_out, t_out)
    np.testing.assert_allclose(e_gx, t_gx)
    np.testing.assert_allclose(e_gw, t_gw * (w_np != 0))  # (the masked gradient)


def test_linear_with_a_sparse_weight_and_bias_gradcheck():
    # torch's COO form refuses a bias ("addmm_sparse_dense: expected either 'mat1' to have
    # sparse layout"); Ember adds it
    rs = np.random.RandomState(1)
    x = ember.tensor(rs.randn(2, 4, 3), requires_grad=True)
    w = ember.tensor(rs.randn(2, 3)).to_sparse()
    b = ember.tensor(rs.randn(2), requires_grad=True)

    def f(x, v, b):
        return ember.nn.functional.linear(x, ember.sparse_coo_tensor(w._indices(), v, (2, 3)), b)
    assert ember.autograd.gradcheck(f, (x, w._values().detach().requires_grad_(), b))
    np.testing.assert_allclose(f(x, w._values(), b).detach().numpy(),
                               x.detach().numpy() @ w.to_dense().numpy().T + b.detach().numpy())


def test_linear_with_a_sparse_weight_refuses_bad_operands():
    w = ember.eye(3)[:2].to_sparse()
    with pytest.raises(ShapeError, match="linear: input of shape \\(2, 4\\) has 4 features but "
                                         "weight of shape \\(2, 3\\) expects 3"):
        ember.nn.functional.linear(ember.ones(2, 4), w)
    with pytest.raises(SparseUnsupported, match="^linear: not supported for ember.sparse_coo"):
        ember.nn.functional.linear(w, w)
    with pytest.raises(ShapeError, match="linear: expected a 2-D sparse matrix"):
        ember.nn.functional.linear(ember.ones(2, 3), ember.ones(2, 3, 2).to_sparse())
