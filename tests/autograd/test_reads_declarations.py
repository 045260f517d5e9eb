"""Every primitive that lets the tape drop inputs (a ``reads`` override, or ``save_inputs``
False) declares exactly what its rules read: gradients (first order, second order under
``create_graph``, and forward-over-reverse tangents) are the same whether the tape drops the
inputs the rule says it does not read, keeps everything, or passes the inputs through
identity saved-tensor hooks. (hardswish_grad declared its upstream gradient unread; a large
input's second derivative came back 0.)

Each case below is run once with every input requiring grad, and each primitive application
it records (forward and backward graphs) is replayed with every floating input in turn a
constant or a non-leaf, with the size threshold for dropping set to 0 so small inputs are
dropped as large ones are. A primitive that can drop inputs and is reached by no case fails:
add a case for it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import itertools

import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD
import ember.nn.functional as F
from ember.autograd import graph
from ember.ops.primitive import PRIMITIVES, Primitive, apply

primitive_module = importlib.import_module("ember.ops.primitive")  # (ember.ops.primitive is
#                                                                    the decorator)


def _spd(a):
    return a @ a.mT + ember.eye(a.shape[-1]) * 4


def _view_scatter(a, b):
    a = a * 1
    a[1:3].mul_(b[:2])
    a[:, 1].add_(b[:, 2])
    return a


def _lstm(x, wi, wh, bi, bh):
    h = ember.zeros(1, 2, 4)
    return ember.lstm(x, (h, h), (wi, wh, bi, bh), True, 1, 0.0, True, False, False)[0]


def _istft(a, w):
    w = w.abs() + 0.5  # (the window's overlap-added square is checked: nola_check)
    return ember.istft(ember.stft(a, 8, 2, window=w, return_complex=True), 8, 2, window=w)


# name: (function of the inputs, the inputs' shapes); all inputs are floating and take a
# gradient (integer and boolean operands are made inside)
CASES = {
    "lstm": (_lstm, [(5, 2, 3), (16, 3), (16, 4), (16,), (16,)]),
    "cross_entropy": (lambda a: F.cross_entropy(a, ember.tensor([1, 0, 3, 2]),
                                                label_smoothing=0.1), [(4, 5)]),
    "lp_pool": (lambda a: F.lp_pool2d(a, 2, 2), [(2, 3, 6, 6)]),
    # (padded: unfold's columns summed, so fold in the backward; else window_sum)
    "avg_pool_padded": (lambda a: F.avg_pool2d(a, 3, 1, padding=1), [(2, 3, 6, 6)]),
    "complex": (lambda a, b: ember.view_as_real(ember.complex(a, b).conj() * 2), [(4, 5)] * 2),
    "complex_parts": (lambda a: ember.view_as_complex(a).abs(), [(4, 5, 2)]),
    "rounding": (lambda a: a.floor() + a.ceil() + a.round() + a.trunc() + a.frac(), [(4, 5)]),
    "det": (lambda a: ember.linalg.det(a) + ember.linalg.slogdet(a)[1], [(2, 4, 4)]),
    "frexp": (lambda a: ember.frexp(a)[0] * ember.exp2(a), [(4, 5)]),
    "diagonal": (lambda a: a.diagonal(0, 1, 2) + a.tril().sum(1), [(2, 4, 4)]),
    "fft": (lambda a: ember.fft.irfft(ember.fft.fft(ember.fft.rfft(a)), 8), [(4, 8)]),
    "istft": (_istft, [(32,), (8,)]),
    "layer_norm": (lambda a, w, b: F.layer_norm(a, (5,), w, b) + F.layer_norm(a, (5,)),
                   [(4, 5), (5,), (5,)]),
    "batch_norm": (lambda a, w, b: F.batch_norm(a, ember.zeros(3), ember.ones(3), w, b,
                                                training=True), [(4, 3, 2, 2), (3,), (3,)]),
    "group_norm": (lambda a, w, b: F.group_norm(a, 3, w, b), [(4, 3, 2, 2), (3,), (3,)]),
    # (a weight without a bias: the norm is standardize, then the affine part)
    "standardize": (lambda a, w: F.batch_norm(a, ember.zeros(3), ember.ones(3), w,
                                              training=True), [(4, 3, 2, 2), (3,)]),
    "max_pool": (lambda a: F.max_pool2d(a, 2), [(2, 3, 6, 6)]),  # (3rd order: window_gather)
    "interpolate": (lambda a: F.interpolate(a, scale_factor=2), [(2, 3, 3, 3)]),
    "unary_on_output": (lambda a: ember.erfinv(a.tanh() * 0.9).exp().expm1().sqrt()
                        .reciprocal().tan().sigmoid(), [(4, 5)]),
    "ndtri": (lambda a: ember.special.ndtri(a.sigmoid()), [(4, 5)]),
    "rounding_division": (lambda a, b: ember.div(a, b, rounding_mode="trunc")
                          + ember.floor_divide(a, b), [(4, 5)] * 2),
    "max_min_dim": (lambda a: a.max(1)[0] + a.min(1)[0], [(4, 5)]),
    "cumsum": (lambda a: a.cumsum(1), [(4, 5)]),
    "softmax": (lambda a: a.softmax(1), [(4, 5)]),
    "batch_norm_eval": (lambda a, w, b: F.batch_norm(a, ember.linspace(-1, 1, 3),
                                                     ember.linspace(0.5, 2, 3), w, b),
                        [(4, 3, 2), (3,), (3,)]),
    "slope_grads": (lambda a: F.leaky_relu(a, 0.2) + F.hardtanh(a, -0.5, 0.5), [(4, 5)]),
    "hard_activations": (lambda a: F.hardsigmoid(a) + F.hardswish(a), [(4, 5)]),
    # (the tensor weight's application is the one found first: the last term)
    "lerp": (lambda a, b, w: ember.lerp(a, b, 0.7) + ember.lerp(a, b, w), [(4, 5), (4, 5), (5,)]),
    "embedding": (lambda a: F.embedding(ember.tensor([[0, 2], [3, 0]]), a)
                  + F.embedding(ember.tensor([[1, 2], [1, 0]]), a, padding_idx=0,
                                scale_grad_by_freq=True), [(4, 5)]),
    "embedding_sparse": (lambda a: F.embedding(ember.tensor([[0, 2], [3, 0]]), a, sparse=True),
                         [(4, 5)]),
    "elu": (lambda a: F.elu(a) + F.selu(a) + F.celu(a, -0.5) + F.elu(a, -0.5), [(4, 5)]),
    "elu_": (lambda a: F.elu(a * 1, inplace=True) + F.celu(a * 1, -0.5, inplace=True),
             [(4, 5)]),
    "copysign": (ember.copysign, [(4, 5)] * 2),
    "ldexp": (lambda a: ember.ldexp(a, ember.tensor([[0, 1, 2, 1, 0]])), [(4, 5)]),
    "as_strided": (lambda a: a.as_strided((3, 3), (2, 1)), [(4, 5)]),
    "unfold": (lambda a: a.unfold(1, 3, 2), [(4, 9)]),
    "fake_quantize": (lambda a: ember.fake_quantize_per_tensor_affine(a, 0.1, 0, -128, 127)
                      + ember.fake_quantize_per_channel_affine(
                          a.float(), ember.full((5,), 0.1, dtype=ember.float32),
                          ember.zeros(5, dtype=ember.int32), 1, -128, 127), [(4, 5)]),
    "view_scatter": (_view_scatter, [(4, 5)] * 2),
    "cholesky": (lambda a: ember.linalg.cholesky(_spd(a)), [(2, 4, 4)]),
    "inv": (lambda a: ember.linalg.inv(a + ember.eye(4) * 3), [(2, 4, 4)]),
    "solve": (lambda a, b: ember.linalg.solve(a + ember.eye(4) * 3, b), [(2, 4, 4), (2, 4, 3)]),
    "eigh": (lambda a: ember.linalg.eigh(a + a.mT)[0], [(2, 4, 4)]),
    "qr": (lambda a: ember.linalg.qr(a)[1], [(2, 5, 4)]),
    "pinv": (lambda a: ember.linalg.pinv(a), [(2, 5, 4)]),
    # (no reflectors: [I; 0] in a's graph, with no gradient)
    "no_grad_from": (lambda a: ember.linalg.householder_product(a, ember.zeros(0)) * a,
                     [(3, 2)]),
    # (gelsd's residuals under vmap: passed on where every rank is full)
    "linalg_lstsq_residuals": (lambda a, b: ember.func.vmap(
        lambda a: ember.linalg.lstsq(a, b, driver="gelsd").residuals)(a) * a.sum(), [(2, 5, 3),
                                                                                     (5, 2)]),
    "where_matmul_div": (lambda a, b: ember.where(a > 0, a @ b.mT, b @ a.mT) / (b @ b.mT + 9),
                         [(4, 4)] * 2),
    "conv": (lambda a, w, b: F.conv2d(a, w, b, padding=1), [(2, 3, 5, 5), (4, 3, 3, 3), (4,)]),
    "linear": (F.linear, [(4, 3), (5, 3), (5,)]),  # (a transposed weight: its layout kept)
}

# primitives no case reaches: the collectives need a process group
NOT_REACHED = ("all_gather", "all_reduce", "broadcast", "copy_to_group", "gather_from_group",
               "reduce_from_group", "reduce_scatter", "scatter_to_group")

DROPPERS = sorted(n for n, p in PRIMITIVES.items()
                  if p.differentiable and (type(p).reads is not Primitive.reads
                                           or not p.save_inputs) and n not in NOT_REACHED)


@contextlib.contextmanager
def _mode(mode):
    """``drop``: the tape drops every input a rule does not read, small ones too; ``keep``:
    nothing is dropped; ``hooks``: identity saved-tensor hooks (which skip unread inputs)."""
    saved = graph.WORTH_DROPPING, primitive_module.drop_unread_inputs
    try:
        if mode == "keep":
            primitive_module.drop_unread_inputs = lambda node: None
        else:
            graph.WORTH_DROPPING = primitive_module.WORTH_DROPPING = 0
        with (graph.saved_tensors_hooks(lambda t: t, lambda t: t) if mode == "hooks"
              else contextlib.nullcontext()):
            yield
    finally:
        graph.WORTH_DROPPING = primitive_module.WORTH_DROPPING = saved[0]
        primitive_module.drop_unread_inputs = saved[1]


def _loss(out, squares):
    """A random weighting of the differentiable outputs (plus their squares: an upstream
    gradient that itself takes a gradient, so backward primitives record theirs)."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    rng = np.random.default_rng(2)
    terms = [(o * ember.tensor(rng.standard_normal(o.shape), dtype=o.dtype)).sum()
             + ((o * o).sum() * 0.5 if squares else 0)
             for o in outs if o.requires_grad and not o.dtype.is_complex]
    return sum(terms) if terms else None


def _nodes_of(tensors, found):
    todo = [t._node for t in tensors if t is not None and t._node is not None]
    seen = set()
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        name = getattr(node.prim, "name", None)
        if name in PRIMITIVES and name not in found:
            found[name] = (node.prim, [np.array(t._data, copy=True) for t in node.inputs],
                           dict(node.params))
        todo += [e[0] for e in node.edges if e is not None and e[0] is not None]


@functools.cache
def _recorded():
    """{primitive name: (primitive, input arrays, params)}: its first application in the
    cases' forward graphs and gradient graphs (to the third order)."""
    found = {}
    ember.manual_seed(0)
    with _mode("keep"):
        for fn, shapes in CASES.values():
            rng = np.random.default_rng(0)
            leaves = [ember.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
                      for s in shapes]
            out = fn(*(x.clone() for x in leaves))
            grads = ember.autograd.grad(_loss(out, True), leaves, create_graph=True,
                                        allow_unused=True)
            squares = [(g * g).sum() for g in grads if g is not None and g.requires_grad]
            grads2 = (ember.autograd.grad(sum(squares), leaves, create_graph=True,
                                          allow_unused=True) if squares else ())
            _nodes_of(list(out) if isinstance(out, (tuple, list)) else [out], found)
            _nodes_of(list(grads) + list(grads2), found)
    return found


def _configs(k):
    """Each floating input a constant ('C') or a non-leaf that takes a gradient ('N'): every
    combination of up to 3 inputs, else each input alone one way with the others the other."""
    if k <= 3:
        return list(itertools.product("CN", repeat=k))
    return [tuple("N" * k)] + [tuple(a if j == i else b for j in range(k))
                               for i in range(k) for a, b in ("CN", "NC")]


def _value(t):
    return None if t is None else (np.array(t._data, copy=True), t.stride())


def _gradients(prim, arrays, params, config, order):
    """The first-order gradients of a replay (``order`` "first"), with the second-order ones
    ("second"), or the forward-over-reverse tangents of the first-order ones ("forward")."""
    forward_over_reverse = order == "forward"
    ember.manual_seed(0)  # (sampling primitives draw the same in every mode)
    kinds = iter(config)
    rng = np.random.default_rng(1)
    leaves, inputs = [], []
    for a in arrays:
        if a.dtype.kind not in "fc" or next(kinds) == "C":
            inputs.append(ember.tensor(a))
            continue
        leaf = ember.tensor(a, requires_grad=True)
        if forward_over_reverse:
            leaf = fwAD.make_dual(leaf, ember.tensor(rng.standard_normal(a.shape)
                                                     .astype(a.dtype)))
        leaves.append(leaf)
        inputs.append(leaf.clone())
    loss = _loss(apply(prim, *inputs, **params), False)
    if loss is None or not leaves:
        return None
    grads = ember.autograd.grad(loss, leaves, create_graph=True, allow_unused=True)
    if forward_over_reverse:
        return [None if g is None else _value(fwAD.unpack_dual(g).tangent) for g in grads]
    if order == "first":
        return [_value(g) for g in grads]
    weighted = [(g * ember.tensor(rng.standard_normal(g.shape), dtype=g.dtype)).sum()
                for g in grads if g is not None and g.requires_grad]
    second = (ember.autograd.grad(sum(weighted), leaves, allow_unused=True)
              if weighted else ())
    return [_value(g) for g in grads], [_value(g) for g in second]


def _outcome(mode, *args):
    forward = args[-1] == "forward"
    with _mode(mode), (fwAD.dual_level() if forward else contextlib.nullcontext()):
        try:
            return _gradients(*args)
        except Exception as exc:  # (the same error in every mode is no finding)
            return type(exc).__name__


def _same(x, y):
    if isinstance(x, (list, tuple)):
        return (isinstance(y, (list, tuple)) and len(x) == len(y)
                and all(_same(p, q) for p, q in zip(x, y)))
    if isinstance(x, np.ndarray):
        return (isinstance(y, np.ndarray) and x.shape == y.shape
                and np.array_equal(x, y, equal_nan=True))
    return x == y


@pytest.mark.parametrize("name", DROPPERS)
def test_dropping_unread_inputs_leaves_every_gradient_unchanged(name):
    recorded = _recorded()
    assert name in recorded, (f"{name} may drop inputs (reads / save_inputs) but no case in "
                              f"{__name__}.CASES reaches it: add one")
    prim, arrays, params = recorded[name]
    floating = sum(a.dtype.kind in "fc" for a in arrays)
    for config in _configs(floating):
        for order in ("second", "forward"):
            args = (prim, arrays, params, config, order)
            kept = _outcome("keep", *args)
            if isinstance(kept, str) and order == "second":  # (no second derivative)
                args = (prim, arrays, params, config, "first")
                kept = _outcome("keep", *args)
            for mode in ("drop", "hooks"):
                assert _same(_outcome(mode, *args), kept), (
                    f"{name}: inputs {''.join(config)} (C constant, N non-leaf), {args[-1]}-"
                    f"order gradients differ when the tape {mode}s the inputs the rule does "
                    "not read: its reads is not exact")
