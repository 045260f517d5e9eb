"""Linear algebra against PyTorch and finite differences (see optable.py), plus shape and dtype
errors, the low-precision GEMM path and FLOP counts."""

import numpy as np
import pytest
import torch

import ember
from ember.ops.linalg import Einsum, Matmul
from ember.ops.primitive import TensorSpec
from tests.ops.optable import OpCase, S, arg, op_tests, raises_like_torch, same_as_torch

INF = float("inf")

MATMUL = [
    S(arg(3, 4), arg(4, 5)),                     # 2-D @ 2-D
    S(arg(4), arg(4)),                           # 1-D @ 1-D: a 0-d dot product
    S(arg(3, 4), arg(4)),                        # matrix @ vector
    S(arg(4), arg(4, 5)),                        # vector @ matrix
    S(arg(2, 3, 4), arg(4, 5)),                  # batch @ matrix (broadcast)
    S(arg(2, 1, 3, 4), arg(3, 4, 2)),            # batch broadcasting both ways
    S(arg(4), arg(2, 4, 3)),                     # vector @ batch
    S(arg(2, 3, 4), arg(4)),                     # batch @ vector
    S(arg(4, 3, noncontig=True), arg(3, 2, noncontig=True)),
    S(arg(0, 3), arg(3, 2)),                     # empty rows
    S(arg(2, 0), arg(0, 3)),                     # empty inner dim: zeros
]


def _fixed(fn, **kw):
    return lambda *a: fn(*a, **kw)


CASES = [
    OpCase("matmul", ember.matmul, torch.matmul, MATMUL),
    OpCase("@", lambda a, b: a @ b, lambda a, b: a @ b, MATMUL[:2]),
    OpCase("rmatmul", lambda a, b: a.__rmatmul__(b), lambda a, b: a.__rmatmul__(b),
           [S(arg(4, 5), arg(3, 4))]),
    OpCase("matmul_one_grad", ember.matmul, torch.matmul,
           [S(arg(3, 4), arg(4, 5, grad=False)), S(arg(3, 4, grad=False), arg(4))]),
    OpCase("mm", ember.mm, torch.mm, [S(arg(3, 4), arg(4, 2))]),
    OpCase("bmm", ember.bmm, torch.bmm, [S(arg(2, 3, 4), arg(2, 4, 5))]),
    OpCase("mv", ember.mv, torch.mv, [S(arg(3, 4), arg(4))]),
    OpCase("dot", ember.dot, torch.dot, [S(arg(5), arg(5)), S(arg(0), arg(0))]),
    OpCase("vdot", ember.vdot, torch.vdot, [S(arg(5), arg(5))]),
    OpCase("inner", ember.inner, torch.inner, [S(arg(2, 3), arg(4, 3)), S(arg(), arg(3))]),
    OpCase("outer", ember.outer, torch.outer, [S(arg(3), arg(4)), S(arg(0), arg(2))]),
    OpCase("addmm", ember.addmm, torch.addmm,
           [S(arg(3, 2), arg(3, 4), arg(4, 2)), S(arg(2), arg(3, 4), arg(4, 2), beta=0.5,
                                                  alpha=2.0)]),
    OpCase("addmm_beta0", _fixed(ember.addmm, beta=0), _fixed(torch.addmm, beta=0),
           [S(arg(3, 2, grad=False), arg(3, 4), arg(4, 2))]),
    OpCase("baddbmm", ember.baddbmm, torch.baddbmm,
           [S(arg(1, 3, 2), arg(2, 3, 4), arg(2, 4, 2), alpha=-1.5)]),
    OpCase("addmv", ember.addmv, torch.addmv, [S(arg(3), arg(3, 4), arg(4), beta=2.0)]),
    OpCase("addr", ember.addr, torch.addr, [S(arg(3, 4), arg(3), arg(4))]),
]


EINSUM = [
    ("ij,jk->ik", [arg(3, 4), arg(4, 2)]),
    ("bij,bjk->bik", [arg(2, 3, 4), arg(2, 4, 2)]),
    ("ij->", [arg(3, 4)]),
    ("ij->j", [arg(3, 4)]),                        # a subscript summed in one operand only
    ("ij,j->i", [arg(3, 4), arg(4)]),
    ("i,j->ij", [arg(3), arg(4)]),
    ("ii->i", [arg(3, 3)]),                        # diagonal
    ("ii", [arg(3, 3)]),                           # trace, implicit output
    ("iij->j", [arg(2, 2, 3)]),
    ("ij,ij->", [arg(3, 4), arg(3, 4, noncontig=True)]),
    ("...ij,...jk->...ik", [arg(2, 3, 4), arg(4, 5)]),  # ellipsis broadcasting
    ("ba,cb", [arg(3, 2), arg(4, 3)]),             # implicit output, sorted letters
    ("ij,jk,kl->il", [arg(2, 3), arg(3, 4), arg(4, 2)]),
    ("ij,kj->ik", [arg(3, 1), arg(2, 4)]),         # size-1 broadcasting of a subscript
    ("i,i->", [arg(0), arg(0)]),
    ("...->...", [arg()]),
]


def _es(eq, args):
    return OpCase(f"einsum[{eq}]", lambda *a: ember.einsum(eq, *a),
                  lambda *a: torch.einsum(eq, *a), [S(*args)])


CASES += [_es(eq, args) for eq, args in EINSUM]

CASES += [
    OpCase("einsum_list", lambda a, b: ember.einsum("ij,jk", [a, b]),
           lambda a, b: torch.einsum("ij,jk", [a, b]), [S(arg(2, 3), arg(3, 2))]),
    OpCase("tensordot", ember.tensordot, torch.tensordot,
           [S(arg(2, 3, 4), arg(3, 4, 5)), S(arg(2, 3), arg(3, 2), dims=1),
            S(arg(2, 3, 4), arg(4, 2, 3), dims=([1, 2], [2, 0])),
            S(arg(2, 3), arg(4, 5), dims=0),
            # a contracted size-1 dim broadcasts against its partner, as PyTorch's
            S(arg(1, 1, 1), arg(2, 1, 2), dims=((0, 1), (2, 0))),
            S(arg(3, 4), arg(1, 4), dims=2), S(arg(3, 2), arg(1, 4), dims=([1], [0]))]),
    # norms
    OpCase("vector_norm", ember.linalg.vector_norm, torch.linalg.vector_norm,
           [S(arg(3, 4)), S(arg(3, 4), dim=1), S(arg(2, 3, 4), ord=1, dim=(0, 2)),
            S(arg(3, 4), ord=INF, dim=-1, keepdim=True), S(arg(3, 4), ord=-INF),
            S(arg(3, 4), ord=3), S(arg(3, 4, low=0.2), ord=0.5, dim=0), S(arg(3, 4), ord=-2),
            S(arg()), S(arg(0, 3), dim=0), S(arg(2, 3, noncontig=True), ord=1.5, dim=1)]),
    OpCase("vector_norm_0", ember.linalg.vector_norm, torch.linalg.vector_norm,
           [S(arg(3, 4, integer=True), ord=0, dim=1)], grad=False),
    OpCase("matrix_norm", ember.linalg.matrix_norm, torch.linalg.matrix_norm,
           [S(arg(3, 4)), S(arg(2, 3, 4), ord=1), S(arg(2, 3, 4), ord=-1, keepdim=True),
            S(arg(3, 4), ord=INF), S(arg(2, 3, 4), ord=-INF, dim=(0, 2))]),
    OpCase("linalg.norm", ember.linalg.norm, torch.linalg.norm,
           [S(arg(3, 4)), S(arg(3, 4), ord=1), S(arg(4), ord=3), S(arg(2, 3, 4), dim=(1, 2)),
            S(arg(2, 3, 4), ord=INF, dim=1)]),
    OpCase("norm", ember.norm, torch.norm,
           [S(arg(3, 4)), S(arg(3, 4), p=1, dim=1), S(arg(3, 4), p="fro", dim=(0, 1)),
            S(arg(3, 4), p=INF), S(arg(2, 3), p=3, dim=-1, keepdim=True)]),
    OpCase("vecdot", ember.linalg.vecdot, torch.linalg.vecdot,
           [S(arg(2, 3), arg(3)), S(arg(3, 2), arg(3, 1), dim=0), S(arg(), arg()),
            S(arg(), arg(), dim=0), S(arg(), arg(4))]),
    OpCase("multi_dot", lambda *a: ember.linalg.multi_dot(a),
           lambda *a: torch.linalg.multi_dot(a),
           [S(arg(3), arg(3, 4), arg(4, 2)), S(arg(5, 1), arg(1, 6), arg(6, 2), arg(2, 3)),
            S(arg(2, 7), arg(7, 3), arg(3)), S(arg(4), arg(4)),
            S(arg(1, 5), arg(5, 4), arg(4, 6), arg(6, 2), arg(2, 8))]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


# -- errors ----------------------------------------------------------------------------------
def test_matmul_inner_size_error_names_both_shapes():
    with pytest.raises(ember.ShapeError,
                       match=r"matmul: \(32, 784\) @ \(512, 10\): inner sizes 784 and 512 "
                             r"differ"):
        ember.ones(32, 784) @ ember.ones(512, 10)


def test_matmul_batch_and_0d_errors():
    with pytest.raises(ember.ShapeError, match=r"batch dimensions \(2,\) and \(3,\)"):
        ember.ones(2, 3, 4) @ ember.ones(3, 4, 5)
    with pytest.raises(ember.ShapeError, match="at least 1 dimension"):
        ember.ones(()) @ ember.ones(3)


def test_matmul_dtype_mismatch_is_a_dtype_error():
    with pytest.raises(ember.DTypeError, match="same dtype"):
        ember.ones(2, 3) @ ember.ones(3, dtype=ember.float64)


@pytest.mark.parametrize("fn,match", [
    (lambda: ember.mm(ember.ones(3), ember.ones(3, 2)), "mm: input must be 2-D"),
    (lambda: ember.bmm(ember.ones(2, 3, 4), ember.ones(3, 4, 5)), "batch sizes 2 and 3"),
    (lambda: ember.mv(ember.ones(3, 2), ember.ones(2, 1)), "mv: vec must be 1-D"),
    (lambda: ember.dot(ember.ones(3), ember.ones(4)), "sizes 3 and 4"),
    (lambda: ember.outer(ember.ones(3, 1), ember.ones(4)), "outer: input must be 1-D"),
    (lambda: ember.einsum("ij,jk", ember.ones(2, 3)), "2 operand"),
    (lambda: ember.einsum("ij", ember.ones(2, 3, 4)), r"\(3 dims\) but .* name 2"),
    (lambda: ember.einsum("ij,jk", ember.ones(2, 3), ember.ones(4, 2)), "size 3 and size 4|"
                                                                         "size 3 in one"),
    (lambda: ember.einsum("ii", ember.ones(2, 3)), "different sizes"),
    (lambda: ember.einsum("i->j", ember.ones(2)), "output subscript 'j'"),
    (lambda: ember.einsum("i1", ember.ones(2, 3)), "letters"),
    (lambda: ember.tensordot(ember.ones(2, 3), ember.ones(4, 3)), "tensordot"),
    (lambda: ember.tensordot(ember.ones(2, 3), ember.ones(4, 3), dims=([1], [0])), "differ"),
    (lambda: ember.linalg.matrix_norm(ember.ones(3)), "at least 2 dims"),
])
def test_shape_errors(fn, match):
    with pytest.raises(ember.ShapeError, match=match):
        fn()


@pytest.mark.parametrize("tensors,error,match", [
    (lambda m: [m.ones(3, 3)], ember.ShapeError, "at least 2 tensors but got 1"),
    (lambda m: [m.ones(3, 4), m.ones(4), m.ones(4, 2)], ember.ShapeError,
     r"tensor 1 must be 2-D but has shape \(4,\)"),
    (lambda m: [m.ones(2, 3, 4), m.ones(4, 2)], ember.ShapeError,
     "tensor 0 must be 1-D or 2-D .* use matmul for batched"),
    (lambda m: [m.ones(()), m.ones(3)], ember.ShapeError, "tensor 0 must be 1-D or 2-D"),
    (lambda m: [m.ones(3, 4), m.ones(3, 2)], ember.ShapeError,
     r"tensors 0 and 1 with shapes \(3, 4\) and \(3, 2\) cannot be multiplied"),
    (lambda m: [m.ones(3, 3), m.ones(3, 3, dtype=m.float64)], ember.DTypeError,
     "tensor 0 is float32 and tensor 1 float64"),
    (lambda m: [m.ones(3, 3), [[1.0]]], TypeError, r"'tensors\[1\]' must be Tensor, not list"),
])
def test_multi_dot_refuses_what_torch_refuses(tensors, error, match):
    raises_like_torch(lambda m: m.linalg.multi_dot(tensors(m)), error, match)


@pytest.mark.parametrize("shapes", [[(50, 5), (5, 100), (100, 10)],
                                    [(40, 30), (30, 1), (1, 50), (50, 40)],
                                    [(30, 2), (2, 40), (40, 3), (3, 50), (50, 4)],
                                    [(6,), (6, 7), (7, 8), (8,)]])
def test_multi_dot_multiplies_in_torchs_cheapest_order(shapes):
    from torch.utils.flop_counter import FlopCounterMode

    from ember.utils.flop_counter import FlopCounterMode as EmberFlops
    gen = np.random.default_rng(0)
    arrays = [gen.standard_normal(s) for s in shapes]
    with FlopCounterMode(display=False) as torch_flops:
        expected = torch.linalg.multi_dot([torch.tensor(a) for a in arrays])
    with EmberFlops(display=False) as ember_flops:
        got = ember.linalg.multi_dot([ember.tensor(a) for a in arrays])
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    assert ember_flops.get_total_flops() == torch_flops.get_total_flops()



@pytest.mark.parametrize("shapes", [[(3, 3), (3, 3), (3, 3)], [(4, 2), (2, 4), (4,)],
                                    [(2,), (2, 3), (3, 3), (3, 2)]])
def test_multi_dot_breaks_cost_ties_as_torch(shapes):
    # three matrices follow PyTorch's own rule, (A B) C on a tie (Ember took A (B C)): in
    # bfloat16 each product rounds, so the order shows in the result
    gen = np.random.default_rng(1)
    arrays = [gen.standard_normal(s).astype(np.float32) for s in shapes]
    expected = torch.linalg.multi_dot([torch.tensor(a).bfloat16() for a in arrays])
    got = ember.linalg.multi_dot([ember.tensor(a).to(ember.bfloat16) for a in arrays])
    np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_matrix_power_multiplies_in_torchs_order(dtype):
    # n = 3 is (A A) A as PyTorch's (Ember's squaring loop took A (A A)); each product
    # rounds in half precision, so the order shows
    a = np.random.default_rng(2).standard_normal((4, 3, 3)).astype(np.float32)
    for n in range(6):
        expected = torch.linalg.matrix_power(torch.tensor(a).to(getattr(torch, dtype)), n)
        got = ember.linalg.matrix_power(ember.tensor(a).to(getattr(ember, dtype)), n)
        np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())

def test_norm_errors():
    with pytest.raises(ember.DTypeError, match="floating"):
        ember.linalg.vector_norm(ember.tensor([1, 2]))
    with pytest.raises(ValueError, match="ord 3 is not supported"):
        ember.linalg.matrix_norm(ember.ones(2, 2), 3)
    with pytest.raises(ember.ShapeError, match="1-D or 2-D"):
        ember.linalg.norm(ember.ones(2, 2, 2), ord=1)


def test_infer_rules():
    f32 = ember.float32
    assert Matmul.infer(TensorSpec((5, 1, 3, 4), f32), TensorSpec((2, 4, 6), f32),
                        compute=None) == TensorSpec((5, 2, 3, 6), f32)
    assert Matmul.infer(TensorSpec((4,), f32), TensorSpec((4,), f32),
                        compute=None).shape == ()
    assert Einsum.infer(TensorSpec((2, 3), f32), TensorSpec((3, 4), f32),
                        equation="ij,jk->ki", compute=None).shape == (4, 2)


def test_matmul_flops():
    f32 = ember.float32
    assert Matmul.flops(TensorSpec((32, 784), f32), TensorSpec((784, 10), f32),
                        compute=None) == 2 * 32 * 10 * 784
    assert Matmul.flops(TensorSpec((8, 3, 4), f32), TensorSpec((4, 5), f32),
                        compute=None) == 2 * 8 * 3 * 5 * 4


# -- low precision and integers ------------------------------------------------------------
@pytest.mark.parametrize("dtype,torch_dtype", [(ember.bfloat16, torch.bfloat16),
                                               (ember.float16, torch.float16)])
def test_half_precision_matmul_computes_in_float32(dtype, torch_dtype):
    dev = ember.device("cpu")
    assert ember.backend.compute_dtype(dev, dtype, "gemm") is ember.float32
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 16, 64)), rng.standard_normal((64, 8))
    ea, eb = ember.tensor(a, dtype=dtype), ember.tensor(b, dtype=dtype)
    out = ea @ eb
    assert out.dtype is dtype
    exact = np.asarray(ea.float()) @ np.asarray(eb.float())   # float32 accumulation
    np.testing.assert_array_equal(np.asarray(out.float()),
                                  np.asarray(ember.tensor(exact).to(dtype).float()))
    ref = (torch.tensor(a).to(torch_dtype) @ torch.tensor(b).to(torch_dtype)).float().numpy()
    np.testing.assert_allclose(np.asarray(out.float()), ref, rtol=2e-2, atol=2e-2)
    es = ember.einsum("bij,jk->bik", ea, eb)
    assert es.dtype is dtype
    np.testing.assert_allclose(np.asarray(es.float()), np.asarray(out.float()), rtol=1e-2,
                               atol=1e-2)


def test_half_precision_matmul_gradients_keep_dtype():
    a = ember.randn(3, 4).to(ember.bfloat16).requires_grad_()
    b = ember.randn(4, 2).to(ember.bfloat16).requires_grad_()
    (a @ b).sum().backward()
    assert a.grad.dtype is ember.bfloat16 and b.grad.dtype is ember.bfloat16


def test_integer_matmul_matches_torch():
    a = np.arange(6).reshape(2, 3)
    b = np.arange(12).reshape(3, 4)
    out = ember.from_numpy(a) @ ember.from_numpy(b)
    assert out.dtype is ember.int64
    np.testing.assert_array_equal(out.numpy(), (torch.from_numpy(a) @ torch.from_numpy(b))
                                  .numpy())


def test_beta_zero_ignores_nan_input():
    out = ember.addmm(ember.full((2, 2), float("nan")), ember.ones(2, 3), ember.ones(3, 2),
                      beta=0)
    assert out.tolist() == [[3.0, 3.0], [3.0, 3.0]]


@pytest.mark.parametrize("name,shapes", [("addmm", [(2, 2), (2, 3), (3, 2)]),
                                         ("baddbmm", [(2, 2, 2), (2, 2, 3), (2, 3, 2)]),
                                         ("addbmm", [(2,), (2, 2, 3), (2, 3, 2)]),
                                         ("addmv", [(2,), (2, 3), (3,)]),
                                         ("addr", [(2, 3), (2,), (3,)])])
def test_beta_zero_input_gets_a_zero_gradient_as_torch(name, shapes):
    # torch keeps an ignored input that needs a gradient in the graph: zeros, not an error
    grads = []
    for lib in (ember, torch):
        first = lib.full(shapes[0], float("nan"), requires_grad=True)
        rest = [lib.ones(*s) for s in shapes[1:]]
        out = getattr(lib, name)(first, *rest, beta=0)
        assert out.requires_grad and not lib.isnan(out).any()
        out.sum().backward()
        grads.append(first.grad.tolist())
    assert grads[0] == grads[1]


REFUSED_INPUTS = [  # (torch raises for each, whatever beta)
    ("addmv", [(2, 3), (3, 4), (4,)], "float32"), ("addr", [(3, 2, 2), (2,), (2,)], "float32"),
    ("addbmm", [(5, 2, 2), (3, 2, 2), (3, 2, 2)], "float32"),
    ("addmm", [(2, 2), (2, 2), (2, 2)], "float64"), ("baddbmm", [(2, 2), (3, 2, 2), (3, 2, 2)],
                                                     "float64")]


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("beta", [0, 1])
@pytest.mark.parametrize("name,shapes,dtype", REFUSED_INPUTS)
def test_an_input_that_does_not_fit_the_product_is_refused_as_torch(name, shapes, dtype,
                                                                    requires_grad, beta):
    # with beta=0 the result's shape and dtype followed the input only when it needed a
    # gradient; with beta=1 a wider input promoted the result or broadcast it bigger
    for lib in (torch, ember):
        first = lib.ones(*shapes[0], dtype=getattr(lib, dtype), requires_grad=requires_grad)
        with pytest.raises(RuntimeError):
            getattr(lib, name)(first, *[lib.ones(*s) for s in shapes[1:]], beta=beta)


@pytest.mark.parametrize("beta", [0, 1])
@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("int64", "float32"),
                                    ("float64", "float32"), ("int64", "int32")])
def test_addr_promotes_its_input_and_vectors_as_torch(dtypes, beta):
    # (addr alone of the family promotes: the input check above must leave it)
    got = []
    for lib in (torch, ember):
        di, dv = (getattr(lib, d) for d in dtypes)
        out = lib.addr(lib.ones(2, 3, dtype=di), lib.ones(2, dtype=dv), lib.ones(3, dtype=dv),
                       beta=beta)
        got.append((str(out.dtype).rpartition(".")[2], out.tolist()))
    assert got[0] == got[1]


@pytest.mark.parametrize("beta,alpha", [(3, 2), (0, 1), (1, 0), (0, 0), (False, True)])
def test_addr_of_bools_is_logical_as_torch(beta, alpha):
    # PyTorch: (beta and input) or (alpha and outer(vec1, vec2)), a bool result (was int64)
    got = []
    for lib in (torch, ember):
        i, v = lib.tensor([[True, False], [False, False]]), lib.tensor([True, False])
        out = lib.addr(i, v, ~v, beta=beta, alpha=alpha)
        i.addr_(v, ~v, beta=beta, alpha=alpha)
        got.append((str(out.dtype).rpartition(".")[2], out.tolist(), i.tolist()))
    assert got[0] == got[1]


def test_inplace_addmm():
    x = ember.zeros(2, 2)
    x.addmm_(ember.ones(2, 3), ember.ones(3, 2), alpha=2)
    assert x.tolist() == [[6.0, 6.0], [6.0, 6.0]]


# -- gradients that need a closer look -------------------------------------------------------
def test_matmul_hessian_vector_product():
    a = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    b = ember.randn(4, 2, dtype=ember.float64, requires_grad=True)
    (ga,) = ember.autograd.grad(((a @ b) ** 2).sum(), a, create_graph=True)
    (gb,) = ember.autograd.grad(ga.sum(), b)
    ta = torch.from_numpy(a.detach().numpy().copy()).requires_grad_()
    tb = torch.from_numpy(b.detach().numpy().copy()).requires_grad_()
    (tga,) = torch.autograd.grad(((ta @ tb) ** 2).sum(), ta, create_graph=True)
    (tgb,) = torch.autograd.grad(tga.sum(), tb)
    np.testing.assert_allclose(gb.numpy(), tgb.numpy(), rtol=1e-10)


def test_norm_gradient_at_zero_rows():
    x = ember.tensor([[0.0, 0.0], [3.0, 4.0]], requires_grad=True)
    ember.linalg.vector_norm(x, dim=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.0, 0.0], [0.6, 0.8]])


@pytest.mark.parametrize("ord", [-0.5, -1.0, -2.0])
@pytest.mark.parametrize("values", [[0.0, 0.0, 0.0], [0.0, 1.0, -2.0], [1.5, -2.0, 3.0]])
def test_negative_ord_vector_norm_gradient_with_zeros_is_zero_as_torch(ord, values):
    # |x|^ord is inf at 0: the gradient there was nan (inf * 0); PyTorch's is 0
    grads = []
    for lib in (torch, ember):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        lib.linalg.vector_norm(x, ord).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
    if 0.0 not in values:
        x = ember.tensor(values, dtype=ember.float64, requires_grad=True)
        assert ember.autograd.gradcheck(lambda t: ember.linalg.vector_norm(t, ord), (x,))


def test_linear_weight_gradient_is_c_ordered_without_a_copy():
    # x @ w.T: the gradient of the transposed view is made as (gᵀx)ᵀ, so w.grad is C-ordered
    # straight from the GEMM (no transposing copy), and equals PyTorch's
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    ew = ember.from_numpy(w).requires_grad_()
    (ember.from_numpy(x) @ ew.T).square().sum().backward()
    tw = torch.from_numpy(w).requires_grad_()
    (torch.from_numpy(x) @ tw.T).square().sum().backward()
    assert ew.grad.is_contiguous()
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("args", [
    ((2, 3), [0, 1], (3, 4), [1, 2], [0, 2]), ((2, 3), [0, 1], (3, 4), [1, 2]),
    ((2, 5, 3), [Ellipsis, 1], [1]), ((2, 5, 3), [0, Ellipsis], [Ellipsis]),
    ((2, 3), [0, 30], [30, 0]),
    # an implied output orders subscripts by number across 25|26 (was by letter: a-z, A-Z)
    ((2, 3), [51, 0]), ((2, 3), [26, 25]), ((2, 3), [25, 26]), ((2, 3), [30, 4], (3, 5), [4, 1]),
])
def test_einsum_sublist_form_matches_torch(args):
    values = [np.arange(np.prod(a), dtype=np.float64).reshape(a) if isinstance(a, tuple)
              else a for a in args]
    same_as_torch(lambda m: m.einsum(*[m.tensor(v) if isinstance(v, np.ndarray) else v
                                       for v in values]))
    with pytest.raises(ValueError, match=r"ints in \[0, 52\)"):
        ember.einsum(ember.ones(2, 2), [0, 60])


def test_einsum_sublist_form_takes_numpy_ints_and_names_a_missing_sublist():
    same_as_torch(lambda m: m.einsum(m.ones(3), [np.int64(0)], [np.int64(0)]))
    for args in [(ember.ones(2),), (ember.ones(2), [0], ember.ones(2))]:
        with pytest.raises(ValueError, match="each operand followed by its sublist"):
            ember.einsum(*args)


def test_zero_norm_counts_and_passes_a_zero_gradient_like_torch():
    for lib in (ember, torch):
        x = lib.ones(3, 2, requires_grad=True)
        lib.pdist(x, 0).sum().backward()  # (pdist's p=0 is vector_norm's)
        assert x.grad.tolist() == [[0.0, 0.0]] * 3
    x = ember.tensor([[1.0, 0.0, float("inf")]], requires_grad=True)
    y = ember.linalg.vector_norm(x, 0, dim=1)
    y.sum().backward()
    assert y.tolist() == [2.0] and x.grad.tolist() == [[0.0, 0.0, 0.0]]


# -- vecdot's dtypes, norms of empty matrices, string ords -------------------------------------
@pytest.mark.parametrize("fn,error,match", [
    (lambda m: m.linalg.vecdot(m.tensor([1, 2]), m.tensor([3, 4])), ember.DTypeError,
     "linalg.vecdot: expected a floating point or complex tensor"),
    (lambda m: m.linalg.vecdot(m.ones(3), m.ones(3, dtype=m.float64)), ember.DTypeError,
     "linalg.vecdot: x and y must have the same dtype"),
    (lambda m: m.linalg.vecdot(m.ones(()), m.ones(()), dim=1), IndexError, "dimension 1"),
])
def test_vecdot_refuses_what_torch_refuses(fn, error, match):
    with pytest.raises((RuntimeError, IndexError)):
        fn(torch)
    with pytest.raises(error, match=match):
        fn(ember)


EMPTY = [(0, 3), (3, 0), (0, 0), (2, 0, 3), (2, 3, 0)]


@pytest.mark.parametrize("shape", EMPTY)
@pytest.mark.parametrize("ord", ["fro", "nuc", 2, 1, INF])
@pytest.mark.parametrize("keepdim", [False, True])
def test_positive_matrix_norms_of_empty_matrices_are_zero_as_torch(shape, ord, keepdim):
    same_as_torch(lambda m: m.linalg.matrix_norm(m.zeros(*shape), ord, keepdim=keepdim))
    if len(shape) == 2:
        same_as_torch(lambda m: m.linalg.norm(m.zeros(*shape), ord))
    x = ember.zeros(*shape, requires_grad=True)
    ember.linalg.matrix_norm(x, ord).sum().backward()
    assert x.grad.shape == x.shape


@pytest.mark.parametrize("shape,ord", [((3, 0), -1), ((0, 3), -INF), ((0, 0), -2),
                                       ((2, 3, 0), -1)])
def test_negative_matrix_norms_of_empty_matrices_are_refused_as_torch(shape, ord):
    with pytest.raises(IndexError):
        torch.linalg.matrix_norm(torch.zeros(*shape), ord)
    with pytest.raises(ember.ShapeError, match=f"matrix_norm: the ord={ord} norm .* minimum "
                                               "over no values"):
        ember.linalg.matrix_norm(ember.zeros(*shape), ord)
    same_as_torch(lambda m: m.linalg.matrix_norm(m.zeros(0, 3), -1))  # min of 3 zero columns


@pytest.mark.parametrize("ord", ["fro", "nuc"])
def test_string_ords_are_matrix_norms_also_of_vectors(ord):
    raises_like_torch(lambda m: m.linalg.norm(m.ones(3), ord), ember.ShapeError,
                      "linalg.matrix_norm: the input tensor A must have at least 2 dims")
    raises_like_torch(lambda m: m.linalg.norm(m.ones(3, 3), ord, dim=0), ember.ShapeError,
                      "dim must be a 2-tuple")
    raises_like_torch(lambda m: m.linalg.vector_norm(m.ones(3), ord), TypeError,
                      "vector_norm: ord must be a number")
    same_as_torch(lambda m: m.linalg.norm(m.ones(2, 3, 3), ord, dim=(0, 2)), rtol=1e-6)
    same_as_torch(lambda m: m.linalg.norm(m.ones(2, 3, 3), None, dim=(0, 2)), rtol=1e-6)


@pytest.mark.parametrize("ord,dim", [(-1, None), (-INF, 1), (INF, None), (-0.5, 1)])
def test_vector_norms_without_identity_refuse_empty_dims_as_torch(ord, dim):
    raises_like_torch(lambda m: m.linalg.vector_norm(m.zeros(2, 0), ord, dim),
                      ember.ShapeError, "vector_norm: cannot compute the .* norm over an empty")
    same_as_torch(lambda m: m.linalg.vector_norm(m.zeros(2, 0), ord, 0))  # (2 empty norms)


def test_a_tensor_times_a_numpy_array_is_computed_as_pytorch():
    """``t @ array`` as PyTorch (it raised that a dense tensor met a 'numpy.ndarray' layout);
    the array's dtype promotes as PyTorch's result shows."""
    for b in (np.arange(6.0).reshape(3, 2), np.arange(3, dtype=np.float32)):
        got, want = ember.ones(2, 3) @ b, torch.ones(2, 3) @ b
        np.testing.assert_allclose(got.numpy(), want.numpy())
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]


_SOLVERS = {  # (A or its factor, B) -> solution, for each solver whose batch dims broadcast
    "linalg.solve": lambda lib, a, b: lib.linalg.solve(a, b),
    "linalg.lu_solve": lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b),
    "linalg.lstsq": lambda lib, a, b: lib.linalg.lstsq(a, b),
    "linalg.solve_triangular": lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=True),
    "cholesky_solve": lambda lib, a, b: lib.cholesky_solve(b, lib.linalg.cholesky(a)),
    "linalg.ldl_solve": lambda lib, a, b: lib.linalg.ldl_solve(*lib.linalg.ldl_factor(a), b),
}


@pytest.mark.parametrize("op", list(_SOLVERS))
def test_solvers_name_both_shapes_when_batch_dims_do_not_broadcast(op):
    # (they named only the batch shapes, '(2,) and (4,)'; cholesky_solve named
    # linalg.solve_triangular; ldl_solve raised NumPy's broadcast ValueError inside an OpError)
    a = np.eye(3) * 4 + np.ones((2, 3, 3))
    b = np.ones((4, 3, 2))
    with pytest.raises(RuntimeError):
        _SOLVERS[op](torch, torch.from_numpy(a), torch.from_numpy(b))
    with pytest.raises(ember.ShapeError, match=rf"^{op}: the batch dims of .*\(2, 3, 3\) "
                                               r"float64 and B \(4, 3, 2\) float64 do not "
                                               r"broadcast: \(2,\) and \(4,\)"):
        _SOLVERS[op](ember, ember.from_numpy(a), ember.from_numpy(b))


def test_solvers_with_left_false_name_the_b_given():
    # (they named B transposed, '(4, 3, 2)', and the shape error said 'AX = B')
    a = ember.tensor(np.eye(3) * 4 + np.ones((2, 3, 3)))
    for f in (lambda b: ember.linalg.solve(a, b, left=False),
              lambda b: ember.linalg.lu_solve(*ember.linalg.lu_factor(a), b, left=False)):
        with pytest.raises(ember.ShapeError, match=r"and B \(4, 2, 3\) float64 do not"):
            f(ember.ones(4, 2, 3, dtype=ember.float64))
    with pytest.raises(ember.ShapeError, match=r"XA = B: A is .* and B \(2, 4\) float64"):
        ember.linalg.solve(a, ember.ones(2, 4, dtype=ember.float64), left=False)


def test_matrix_power_takes_a_0d_integer_tensor_n_as_torch():
    # (it raised 'n must be an integer, got Tensor'; torch reads a 0-d integer tensor as an int)
    a = np.random.default_rng(2).standard_normal((2, 3, 3))
    got = ember.linalg.matrix_power(ember.from_numpy(a), ember.tensor(3))
    want = torch.linalg.matrix_power(torch.from_numpy(a), torch.tensor(3))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    for n in (1.5, True):
        with pytest.raises(TypeError):
            torch.linalg.matrix_power(torch.from_numpy(a), n)
        with pytest.raises(TypeError, match="linalg.matrix_power: n must be an int"):
            ember.linalg.matrix_power(ember.from_numpy(a), n)


@pytest.mark.parametrize("op", ["solve", "solve_ex"])
def test_solve_with_left_false_refuses_a_vector_b_as_torch(op):
    # (Ember solved x A = b for the vector b; torch raises: X A = B needs the rows of B)
    a, b = np.eye(3) * 2 + 0.1, np.ones(3)
    with pytest.raises(RuntimeError, match="XA = B"):
        getattr(torch.linalg, op)(torch.from_numpy(a), torch.from_numpy(b), left=False)
    with pytest.raises(ember.ShapeError, match=rf"linalg.{op}: with left=False B must be .* "
                                               r"vector \(3,\) float64"):
        getattr(ember.linalg, op)(ember.from_numpy(a), ember.from_numpy(b), left=False)
    x = ember.linalg.solve(ember.from_numpy(a), ember.from_numpy(b[None]), left=False)
    np.testing.assert_allclose((x @ ember.from_numpy(a)).numpy(), b[None], atol=1e-12)


@pytest.mark.parametrize("pivots", [[0, 2, 3], [1, 7, 3]])
def test_lu_pivots_out_of_range_are_refused_as_torch(pivots):
    # (a pivot 0 wrapped round to the last row: a wrong permutation, silently)
    lu, b = np.eye(3) * 2, np.ones((3, 1))
    piv = np.array(pivots, dtype=np.int32)
    for op, fn in (("lu_unpack", lambda lib, p: lib.lu_unpack(lib.from_numpy(lu), p)),
                   ("linalg.lu_solve", lambda lib, p: lib.linalg.lu_solve(
                       lib.from_numpy(lu), p, lib.from_numpy(b)))):
        with pytest.raises(RuntimeError, match="(?i)pivots"):
            fn(torch, torch.from_numpy(piv))
        with pytest.raises(ember.errors.IndexOutOfRange,  # (the public op only)
                           match=rf"^{op}: pivots must be between 1 and 3"):
            fn(ember, ember.from_numpy(piv))


@pytest.mark.parametrize("pivots", [[0, 2, 3], [1, 2, 9], [1, 2, -9]])
def test_ldl_pivots_out_of_range_are_refused_as_torch(pivots):
    # (a pivot 0 wrapped round to the last row silently; 9 raised NumPy's IndexError)
    a = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    piv = np.array(pivots, dtype=np.int32)
    for lib in (torch, ember):
        ld = lib.linalg.ldl_factor(lib.from_numpy(a))[0]
        error = RuntimeError if lib is torch else ember.errors.IndexOutOfRange
        with pytest.raises(error, match=r"(?i)pivot" if lib is torch else
                           r"^linalg.ldl_solve: pivots must satisfy"):
            lib.linalg.ldl_solve(ld, lib.from_numpy(piv), lib.ones(3, 1, dtype=lib.float64))


@pytest.mark.parametrize("ord", ["nuc", 2, -2])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_singular_value_norms_of_half_matrices_name_matrix_norm_as_torch(ord, dtype):
    # (the error named linalg.svdvals, which the caller never called)
    raises_like_torch(lambda lib: lib.linalg.matrix_norm(lib.ones(3, 3, dtype=getattr(lib, dtype)),
                                                         ord),
                      ember.DTypeError, r"^linalg\.matrix_norm: expected a float32 or float64")


def test_matrix_power_of_one_is_a_copy_as_torch():
    # (review65g: n=1 handed A itself back, so a write into the result changed A)
    a = ember.ones(2, 2, requires_grad=True)
    r = ember.linalg.matrix_power(a, 1)
    assert r is not a and r.grad_fn is not None
    e = ember.ones(2, 2)
    ember.linalg.matrix_power(e, 1).add_(1)
    assert e.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    r.sum().backward()
    assert a.grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]
