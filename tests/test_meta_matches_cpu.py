"""The meta device predicts the CPU: for each op, a meta input gives the shape, dtype and
strides the same op gives on the CPU (inputs in several layouts). Ember's CPU linear algebra
returns row-major results where PyTorch's LAPACK gives column-major ones (``linalg.inv(a)
.stride()`` is ``(n, 1)``, PyTorch's ``(1, n)``): the values are the same, a copy to
PyTorch's order would cost time for a layout nothing in Ember reads, so meta follows the CPU."""

import pytest

import ember
import ember.nn.functional as F


def _spd(x):
    return x @ x.mT + 4 * ember.eye(x.shape[-1], dtype=x.dtype, device=x.device)


LINALG = {
    "inv": lambda a: ember.linalg.inv(a), "det": lambda a: ember.linalg.det(a),
    "slogdet": lambda a: ember.linalg.slogdet(a), "qr": lambda a: ember.linalg.qr(a),
    "svd": lambda a: ember.linalg.svd(a), "svdvals": lambda a: ember.linalg.svdvals(a),
    "eigh": lambda a: ember.linalg.eigh(a), "eigvalsh": lambda a: ember.linalg.eigvalsh(a),
    "eig": lambda a: ember.linalg.eig(a), "eigvals": lambda a: ember.linalg.eigvals(a),
    "cholesky": lambda a: ember.linalg.cholesky(a), "solve": lambda a: ember.linalg.solve(a, a),
    "solve_vector": lambda a: ember.linalg.solve(a, a[..., 0, :]),
    "lu_factor": lambda a: ember.linalg.lu_factor(a), "lu": lambda a: ember.linalg.lu(a),
    "pinv": lambda a: ember.linalg.pinv(a), "matrix_exp": lambda a: ember.linalg.matrix_exp(a),
    "lstsq": lambda a: ember.linalg.lstsq(a, a), "norm": lambda a: ember.linalg.norm(a),
    "matrix_norm": lambda a: ember.linalg.matrix_norm(a),
    "matrix_rank": lambda a: ember.linalg.matrix_rank(a),
    "matrix_power": lambda a: ember.linalg.matrix_power(a, 3),
    "solve_triangular": lambda a: ember.linalg.solve_triangular(a, a, upper=True),
    "cholesky_ex": lambda a: ember.linalg.cholesky_ex(a),
    "inv_ex": lambda a: ember.linalg.inv_ex(a),
    "lu_solve": lambda a: ember.linalg.lu_solve(*ember.linalg.lu_factor(a), a),
    "householder_product": lambda a: ember.linalg.householder_product(a, a[..., 0, :2]),
    "ldl_factor": lambda a: ember.linalg.ldl_factor(a), "cond": lambda a: ember.linalg.cond(a),
    "multi_dot": lambda a: ember.linalg.multi_dot([a[0], a[0], a[0]]),
    "cholesky_inverse": lambda a: ember.cholesky_inverse(a), "geqrf": lambda a: ember.geqrf(a),
    "logdet": lambda a: ember.logdet(a), "matmul": lambda a: a @ a,
}
INPUTS = {  # (3, 4, 4) symmetric positive definite batches, in three layouts
    "contiguous": lambda a: a, "transposed": lambda a: a.mT,
    "expanded": lambda a: a[:1].expand(3, 4, 4),
}
OTHER = {
    "conv2d_channels_last": lambda x: F.conv2d(x, ember.empty(5, 3, 3, 3, device=x.device)),
    "max_pool": lambda x: F.max_pool2d(x, 2), "avg_pool": lambda x: F.avg_pool2d(x, 2),
    "batch_norm": lambda x: F.batch_norm(x, None, None, training=True),
    "softmax": lambda x: x.softmax(1), "log_softmax": lambda x: x.log_softmax(-1),
    "sum": lambda x: x.sum(1), "sum_keepdim": lambda x: x.sum((2, 3), keepdim=True),
    "mean": lambda x: x.mean(-1), "amax": lambda x: x.amax(1), "argmax": lambda x: x.argmax(2),
    "cumsum": lambda x: x.cumsum(1), "sort": lambda x: x.sort(1), "topk": lambda x: x.topk(2),
    "matmul": lambda x: x @ x.mT, "flatten": lambda x: x.flatten(1),
    "cat": lambda x: ember.cat([x, x], 1), "stack": lambda x: ember.stack([x, x], 1),
    "pad": lambda x: F.pad(x, (1, 1)),
    "pad_reflect": lambda x: F.pad(x, (1, 2, 1, 1), mode="reflect"),
    "pad_replicate": lambda x: F.pad(x, (2, 0, 0, 0), mode="replicate"),
    "pad_circular_apart": lambda x: F.pad(x, (1, 1, 0, 0, 1, 1), mode="circular"),
    "pad_reflect_grad": lambda x: ember.autograd.grad(
        F.pad(x := x.detach().requires_grad_(), (1, 1, 1, 1), mode="reflect").sum(), [x]),
    "interpolate": lambda x: F.interpolate(x, scale_factor=2),
    "layer_norm": lambda x: F.layer_norm(x, (5,)), "gelu": lambda x: F.gelu(x),
    "glu": lambda x: F.glu(x, 2), "glu_last": lambda x: F.glu(x[..., :4], -1),
    "glu_grad": lambda x: ember.autograd.grad(F.glu(x := x.detach().requires_grad_(), 2).sum(),
                                              [x]),
    "group_norm": lambda x: F.group_norm(x, 3, ember.ones(3, device=x.device),
                                         ember.zeros(3, device=x.device)),
    "where": lambda x: ember.where(x > 0, x, 0.0), "index_list": lambda x: x[:, [0, 2]],
    "permute_copy": lambda x: x.permute(0, 2, 3, 1).contiguous(),
    "transpose_view": lambda x: x.transpose(1, 3), "none_index": lambda x: x[:, None, ..., None],
}
LAYOUTS_4D = {  # (2, 3, 4, 5)
    "contiguous": lambda x: x, "channels_last": lambda x: x.contiguous(
        memory_format=ember.channels_last),
    "permuted": lambda x: x.permute(0, 1, 3, 2).contiguous().permute(0, 1, 3, 2),
}


def _specs(r):
    r = tuple(r) if isinstance(r, tuple) else (r,)
    return [(tuple(t.shape), t.dtype, t.stride()) for t in r if isinstance(t, ember.Tensor)]


def _check(op, make_input, shape, dtype):
    cpu = make_input(ember.randn(*shape, dtype=dtype))
    meta = make_input(ember.empty(*shape, dtype=dtype, device="meta"))
    got = op(meta)
    assert all(t.is_meta for t in (got if isinstance(got, tuple) else (got,))
               if isinstance(t, ember.Tensor))
    assert _specs(got) == _specs(op(cpu))


@pytest.mark.parametrize("layout", INPUTS)
@pytest.mark.parametrize("name", LINALG)
def test_linalg_on_meta_predicts_the_cpu(name, layout):
    _check(LINALG[name], lambda a: INPUTS[layout](_spd(a)), (3, 4, 4), ember.float64)


# Known gaps: these CPU kernels keep (part of) their input's layout, or conv2d writes
# channels-last, where meta gives C order (other results: C order on both).
META_LAYOUT_GAPS = {
    "conv2d_channels_last": set(LAYOUTS_4D),
    "batch_norm": {"channels_last"},
    "max_pool": {"channels_last"}, "cat": {"channels_last"},
    "stack": {"channels_last"},
}


@pytest.mark.parametrize("layout", LAYOUTS_4D)
@pytest.mark.parametrize("name", OTHER)
def test_ops_on_meta_predict_the_cpu(name, layout):
    if layout in META_LAYOUT_GAPS.get(name, ()):
        pytest.xfail("meta gives C order where this CPU kernel keeps the input's layout")
    _check(OTHER[name], LAYOUTS_4D[layout], (2, 3, 4, 5), ember.float32)


def test_conv2d_takes_an_f_ordered_input():
    """(numba found an F-ordered array two equally good signatures and refused)"""
    x = ember.randn(2, 3, 4, 5).permute(0, 1, 3, 2).contiguous().permute(0, 1, 3, 2)
    w = ember.randn(5, 3, 3, 3)
    assert ember.allclose(F.conv2d(x, w), F.conv2d(x.contiguous(), w), atol=1e-5)
