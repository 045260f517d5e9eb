"""The reverse-mode engine: deep graphs, shared subgraphs, retain/create graph, hooks,
version counters and errors."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import GradError


def f64(values, requires_grad=True):
    return ember.tensor(values, dtype=ember.float64, requires_grad=requires_grad)


def test_chain_of_100k_ops_has_no_recursion_limit():
    x = ember.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward(ember.ones(1))
    assert x.grad.item() == 1.0


def test_diamond_sums_gradients_like_torch():
    values = [0.5, -1.5, 2.0]
    x = f64(values)
    y = x * x
    z = y * y + y * x - y / (x + 3.0)
    z.backward(ember.ones(3, dtype=ember.float64))
    tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    ty = tx * tx
    (ty * ty + ty * tx - ty / (tx + 3.0)).backward(torch.ones(3, dtype=torch.float64))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_second_backward_needs_retain_graph():
    x = f64([1.0, 2.0])
    y = x * x
    y.backward(ember.ones(2, dtype=ember.float64))
    with pytest.raises(GradError, match="retain_graph=True"):
        y.backward(ember.ones(2, dtype=ember.float64))


def test_retain_graph_allows_second_backward_and_accumulates():
    x = f64([1.0, 2.0])
    y = x * x
    y.backward(ember.ones(2, dtype=ember.float64), retain_graph=True)
    y.backward(ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])


def test_hessian_vector_product_matches_torch():
    values, v = [0.3, -1.2, 2.5], [1.0, -2.0, 0.5]
    x = f64(values)
    y = x * x * x / (1.0 + x * x)
    (g,) = ember.autograd.grad(y, x, ember.ones(3, dtype=ember.float64), create_graph=True)
    (hv,) = ember.autograd.grad(g, x, f64(v, False))
    tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    ty = tx * tx * tx / (1.0 + tx * tx)
    (tg,) = torch.autograd.grad(ty, tx, torch.ones(3, dtype=torch.float64), create_graph=True)
    (thv,) = torch.autograd.grad(tg, tx, torch.tensor(v, dtype=torch.float64))
    np.testing.assert_allclose(hv.numpy(), thv.numpy(), rtol=1e-10)
    z, e, d = np.array(values), 1e-6, np.array(v)
    first = lambda z: (3 * z**2 * (1 + z**2) - 2 * z**4) / (1 + z**2) ** 2  # noqa: E731
    np.testing.assert_allclose(hv.numpy(), (first(z + e * d) - first(z - e * d)) / (2 * e),
                               rtol=1e-7)


def test_third_derivative():
    x = f64([2.0])
    y = x * x * x * x
    (d1,) = ember.autograd.grad(y, x, create_graph=True)
    (d2,) = ember.autograd.grad(d1, x, create_graph=True)
    (d3,) = ember.autograd.grad(d2, x)
    assert d3.item() == pytest.approx(24 * 2.0)


def test_grad_of_non_leaf_and_unused_inputs():
    x, w = f64([1.0, 2.0]), f64([3.0, 4.0])
    h = x * w
    out = h * h
    gh, gw = ember.autograd.grad(out, [h, w], ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(gh.numpy(), 2 * h.detach().numpy())
    np.testing.assert_allclose(gw.numpy(), 2 * h.detach().numpy() * x.detach().numpy())
    unused = f64([1.0])
    with pytest.raises(GradError, match="allow_unused"):
        ember.autograd.grad(x * x, [x, unused], ember.ones(2, dtype=ember.float64))
    gx, gu = ember.autograd.grad(x * x, [x, unused], ember.ones(2, dtype=ember.float64),
                                 allow_unused=True)
    assert gu is None
    assert x.grad is None  # grad() never touches .grad


def test_grads_of_two_leaves_never_alias():
    x, y = f64([1.0, 2.0]), f64([3.0, 4.0])
    (x + y).backward(ember.ones(2, dtype=ember.float64))
    assert not np.shares_memory(x.grad.numpy(), y.grad.numpy())
    x.grad.zero_() if hasattr(x.grad, "zero_") else x.grad.numpy().fill(0)
    np.testing.assert_allclose(y.grad.numpy(), [1.0, 1.0])


def test_gradient_through_broadcast_is_writable():
    x = f64([1.0, 2.0, 3.0])
    b = f64([0.5])
    (x * b).backward(ember.ones(3, dtype=ember.float64))
    assert b.grad.shape == (1,) and b.grad.item() == pytest.approx(6.0)
    b.grad.numpy()[...] = 0  # a real array, not a read-only broadcast view


def test_backward_on_non_scalar_needs_gradient():
    x = f64([1.0, 2.0])
    with pytest.raises(GradError, match="scalar"):
        (x * x).backward()


def test_backward_without_grad_explains():
    x = f64([1.0], requires_grad=False)
    with pytest.raises(GradError, match="does not require grad"):
        (x * 2).backward()


def test_hooks_on_leaf_and_non_leaf():
    x = f64([1.0, 2.0])
    seen = []
    handle = x.register_hook(lambda g: g * 10)
    y = x * 3.0
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    y.backward(ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(x.grad.numpy(), [30.0, 30.0])
    np.testing.assert_allclose(seen[0], [1.0, 1.0])
    handle.remove()
    x.grad = None
    (x * 3.0).backward(ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_retain_grad_keeps_non_leaf_grad():
    x = f64([1.0, 2.0])
    y = x * 2.0
    y.retain_grad()
    z = y * y
    z.backward(ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(y.grad.numpy(), [4.0, 8.0])
    assert (x * 2.0).grad is None


def test_in_place_change_of_saved_tensor_is_reported():
    x = f64([1.0, 2.0])
    a = x * 2.0
    b = a * a  # mul saves a
    a += 1.0
    with pytest.raises(GradError) as info:
        b.backward(ember.ones(2, dtype=ember.float64))
    msg = str(info.value)
    for part in ["mul", "(2,)", "version 0", "version 1", ".clone()"]:
        assert part in msg


def test_in_place_change_of_unsaved_tensor_is_fine():
    x = f64([1.0, 2.0])
    a = x * 2.0
    b = a + 1.0  # add does not read its inputs in backward
    a += 1.0
    b.backward(ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_in_place_on_leaf_requiring_grad_is_refused():
    x = f64([1.0])
    with pytest.raises(GradError, match="leaf"):
        x += 1.0
    with ember.no_grad():
        x += 1.0
    assert x.item() == 2.0 and x._version == 1


def test_views_share_the_version_counter():
    x = ember.zeros(4)
    v = ember.ops.broadcast.expand(x[:1] if hasattr(ember.Tensor, "__getitem__") else x, (4,))
    assert v._vc is x._vc or v._version == x._version


def test_each_thread_has_its_own_grad_mode():
    import threading

    seen = []

    def worker():
        seen.append(ember.is_grad_enabled())  # a new thread records, whatever started it
        for _ in range(200):
            with ember.no_grad():
                assert not ember.is_grad_enabled()
        seen.append(ember.is_grad_enabled())

    with ember.no_grad():
        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not ember.is_grad_enabled()  # this thread's block, untouched by theirs
    assert ember.is_grad_enabled() and seen == [True] * 8


def test_grad_modes():
    x = f64([1.0])
    with ember.no_grad():
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad
    with ember.inference_mode():
        assert not (x * 2).requires_grad and ember.is_inference_mode_enabled()
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()

    @ember.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad
    ember.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        ember.set_grad_enabled(True)
    with ember.set_grad_enabled(False):
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled()


def test_detach_and_requires_grad_rules():
    x = f64([1.0])
    assert not (x * 2).detach().requires_grad
    with pytest.raises(ember.DTypeError):
        ember.tensor([1, 2], requires_grad=True)
    y = x * 2
    assert y.grad_fn is not None and not y.is_leaf and x.is_leaf
    assert "grad_fn=<MulBackward0>" in repr(y)



def test_tape_keeps_only_inputs_its_rules_read():
    import weakref

    x = ember.randn(256, 256, dtype=ember.float64, requires_grad=True)
    h = x * 2.0  # 512 KiB, not a leaf
    kept_by_mul = x * h  # mul reads h (x needs a gradient): h stays
    seen = weakref.ref(h)
    y = (h + 1.0).sum() + kept_by_mul.sum()
    del h
    assert seen() is not None
    del kept_by_mul
    z = ember.randn(256, 256, dtype=ember.float64, requires_grad=True)
    g = z * 3.0
    seen_g = weakref.ref(g)
    w = (g + 1.0).sum()  # add and sum read no values: g is not kept
    del g
    assert seen_g() is None
    w.backward()
    np.testing.assert_allclose(z.grad.numpy(), np.full((256, 256), 3.0))
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 + 2 * 2.0 * x.detach().numpy())


def test_a_leaf_gradient_is_delivered_as_soon_as_it_is_final():
    # w2's gradient is complete after the last op's backward; w1's only at the end. Hooks see
    # them in that order, while backward is still running (data parallelism overlaps there).
    events = []
    x = ember.randn(3)
    w1 = ember.randn(3, requires_grad=True)
    w2 = ember.randn(3, requires_grad=True)
    a = w1 * x
    a.register_hook(lambda g: events.append("a"))
    w1.register_hook(lambda g: events.append("w1"))
    w2.register_hook(lambda g: events.append(("w2", w2.grad)))
    (a * w2).sum().backward()
    assert events == [("w2", None), "a", "w1"]
    assert w2.grad is not None and w1.grad is not None
    w2.register_hook(lambda g: events.append("again"))
    (w2 * w2 * x).sum().backward()  # used twice: delivered once, summed
    assert events.count("again") == 1


def test_grad_runs_hooks_of_the_leaves_it_returns_only():
    seen = []
    x = ember.randn(3, requires_grad=True)
    w = ember.randn(3, requires_grad=True)
    w.register_hook(lambda g: seen.append("w"))
    x.register_hook(lambda g: seen.append("x"))
    (gx,) = ember.autograd.grad((x * w).sum(), x)
    assert seen == ["x"] and w.grad is None


def test_a_hook_sees_whether_the_pass_accumulates_into_grad():
    # (DDP's hooks communicate only in passes that fill .grad, as torch's AccumulateGrad hooks)
    from ember.autograd.engine import running_task

    seen = []
    x = ember.randn(3, requires_grad=True)
    x.register_hook(lambda g: seen.append(running_task().accumulates))
    ember.autograd.grad((x * 2).sum(), x)
    (x * 2).sum().backward()
    (x * 2).sum().backward(inputs=[x])
    assert seen == [False, True, True]


def test_an_assigned_grad_must_have_the_tensors_shape():
    # (an optimizer's one-pass update reads the gradient as long as the parameter)
    w = ember.zeros(3, requires_grad=True)
    with pytest.raises(ember.ShapeError, match=r"grad: assigned a gradient of shape \(5,\) "
                                               r"to a tensor of shape \(3,\)"):
        w.grad = ember.ones(5)
    with pytest.raises(TypeError, match="grad: expected a tensor or None, got list"):
        w.grad = [1.0, 2.0, 3.0]
    assert w.grad is None
    w.grad = ember.ones(3)
    ember.optim.SGD([w], lr=0.5).step()
    assert w.tolist() == [-0.5, -0.5, -0.5]


def test_grad_modes_as_bare_decorators_and_on_generators():
    x = f64([1.0])

    @ember.no_grad
    def bare(t):
        return t * 2

    @ember.inference_mode
    def bare_inference(t):
        return t * 2

    assert not bare(x).requires_grad and not bare_inference(x).requires_grad

    @ember.no_grad()
    def steps():
        yield (x * 2).requires_grad
        yield (x * 2).requires_grad

    gen = steps()  # each resume runs without grad; the caller's mode in between
    assert next(gen) is False and ember.is_grad_enabled() and next(gen) is False
    with ember.no_grad(), ember.inference_mode(False):  # as torch: recording on again
        assert ember.is_grad_enabled() and (x * 2).requires_grad


def test_grad_options_match_torch():
    def run(lib, **kw):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        unused = lib.tensor([1.0], dtype=lib.float64, requires_grad=True)
        gx, gu = lib.autograd.grad(x ** 3, [x, unused], lib.eye(2, dtype=lib.float64) * 2,
                                   is_grads_batched=True, create_graph=True, **kw)
        (second,) = lib.autograd.grad(gx.sum(), x)
        return gx.detach().numpy(), gu, second.numpy()

    gx, gu, second = run(ember, allow_unused=True)
    tgx, tgu, tsecond = run(torch, allow_unused=True)
    np.testing.assert_allclose(gx, tgx)
    np.testing.assert_allclose(second, tsecond)
    assert gu is None and tgu is None
    x, unused = f64([1.0, 2.0]), f64([3.0])
    _, zeros = ember.autograd.grad((x * 2).sum(), [x, unused], materialize_grads=True)
    np.testing.assert_array_equal(zeros.numpy(), [0.0])
    with pytest.raises(ValueError, match="allow_unused"):
        ember.autograd.grad((x * 2).sum(), [x, unused], materialize_grads=True,
                            allow_unused=False)
    (g,) = ember.autograd.grad((x * 2).sum(), x, only_inputs=True)
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0])


def test_hooks_returning_a_wrong_gradient_and_empty_inputs_are_named():
    x = f64([1.0, 2.0])
    y = x * 2
    y.register_hook(lambda g: g.sum())
    with pytest.raises(GradError, match=r"returned a tensor of shape \(\) for a gradient of "
                                        r"shape \(2,\)"):
        (y * 2).sum().backward()
    x.register_hook(lambda g: 3.0)
    with pytest.raises(GradError, match="returned float"):
        (x * 2).sum().backward()
    with pytest.raises(GradError, match="inputs= is empty"):
        (x * 2).sum().backward(inputs=[])


def test_a_second_backward_accumulates_into_the_same_grad_tensor_like_torch():
    for lib in (ember, torch):
        x = lib.ones(3, requires_grad=True)
        (x * 2).sum().backward()
        held = x.grad
        (x * 3).sum().backward()
        assert held is x.grad and held.tolist() == [5.0, 5.0, 5.0]
        (x * x).sum().backward(create_graph=True)  # (a new tensor, with history)
        assert held is not x.grad and x.grad.requires_grad


def test_forward_mode_of_a_product_with_an_infinite_constant_is_finite_where_torch_is():
    import torch.func as tf

    from ember.func import jvp
    x, c = [float("inf"), 2.0], [3.0, 0.0]
    for fn in (lambda x, c: x * c, lambda x, c: c * x, lambda x, c: x / (c + 1),
               lambda x, c: (c + 1) / x):
        _, ours = jvp(lambda t, fn=fn: fn(t, ember.tensor(c)), (ember.tensor(x),),
                      (ember.ones(2),))
        _, theirs = tf.jvp(lambda t, fn=fn: fn(t, torch.tensor(c)), (torch.tensor(x),),
                           (torch.ones(2),))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("fn, twice", [
    (lambda lib, x: x.expand(2, 3).sum(), True),
    (lambda lib, x: (x + 1).sum() - x[1:].sum(), True),
    (lambda lib, x: x.reshape(3, 1).t().sum(), True),
    (lambda lib, x: (x * x).sum(), False),
    (lambda lib, x: x.exp().sum(), False),
])
def test_a_second_backward_needs_freed_values_only_where_pytorch_does(fn, twice):
    import torch

    for lib in (ember, torch):
        x = lib.ones(3, dtype=lib.float64, requires_grad=True)
        y = fn(lib, x)
        y.backward()
        if twice:
            y.backward()
            assert x.grad.tolist() == [2 * g for g in
                                       lib.autograd.grad(fn(lib, x), x)[0].tolist()]
        else:
            with pytest.raises(RuntimeError, match="a second time"):
                y.backward()


def test_release_keeps_constants_and_shapes_and_frees_read_values():
    import gc
    import weakref

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = (y + 1).sum()
    ref = weakref.ref(y)
    del y
    z.backward()
    gc.collect()
    assert ref() is None  # the add node kept y's shape and history, not y
    z.backward()  # nothing read was freed: as torch, it can be gone through again
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0])
    w = (x * x).sum()
    w.backward()
    with pytest.raises(GradError, match="a second time"):
        w.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 8.0])
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    tz = (tx + 1).sum()  # (torch's x * 2 saves the 2 as a tensor; Ember keeps it as a constant)
    tz.backward()
    tz.backward()
    z = (x + 1).sum()
    x.grad = None
    z.backward()
    z.backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "complex64"])
def test_accumulating_into_grad_sums_in_place_as_torch(dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4))
    w1, w2 = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    x = ember.tensor(a, dtype=getattr(ember, dtype), requires_grad=True)
    tx = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True)
    (x * ember.tensor(w1, dtype=x.dtype)).sum().abs().backward()
    (tx * torch.tensor(w1, dtype=tx.dtype)).sum().abs().backward()
    first, version = x.grad, x.grad._version
    view = first.view(-1)
    (x * ember.tensor(w2, dtype=x.dtype)).sum().abs().backward()
    (tx * torch.tensor(w2, dtype=tx.dtype)).sum().abs().backward()
    assert x.grad is first and x.grad._version == version + 1  # in place, as torch's
    got, want = x.grad.float().numpy(), tx.grad.float().numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(view.float().numpy(), want.reshape(-1))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_implied_gradient_and_a_broadcast_first_grad_as_torch(dtype):
    # the implied 1 of a 0-d output has its dtype; a leaf's first gradient that is a
    # broadcast (sum's) lands in .grad as a contiguous tensor of its own, not a view, and the
    # next one is summed into it in place
    a = np.random.default_rng(0).standard_normal((3, 4))
    x = ember.tensor(a, dtype=getattr(ember, dtype), requires_grad=True)
    tx = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True)
    y, ty = (x * 2).sum(), (tx * 2).sum()
    seen = []
    y.register_hook(lambda g: seen.append(g))
    y.backward(), ty.backward()
    assert seen[0].shape == () and seen[0].dtype == x.dtype and seen[0].item() == 1.0
    first, version = x.grad, x.grad._version
    assert not first._is_view() and not tx.grad._is_view() and first.is_contiguous()
    x.sum().backward(), tx.sum().backward()
    assert x.grad is first and x.grad._version == version + 1
    np.testing.assert_array_equal(x.grad.float().numpy(), tx.grad.float().numpy())


@pytest.mark.parametrize("shape", [(3, 1, 4), (1, 5), (2, 3, 1, 1)])
def test_a_broadcast_first_grad_of_a_c_ordered_leaf_is_c_ordered_as_torch(shape):
    # (the C-ordered leaf's shortcut: no dimension order to find, size-1 dims included)
    x = ember.zeros(shape, requires_grad=True)
    tx = torch.zeros(shape, requires_grad=True)
    x.sum().backward(), tx.sum().backward()
    assert x.grad.stride() == tx.grad.stride() and x.grad.is_contiguous()
    assert not x.grad._is_view() and x.grad._data.flags.writeable
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize(("make", "dims"), [((1, 3, 4), (1, 0, 2)),       # (3, 1, 4): 4, 12, 1
                                            ((2, 1, 1, 3), (0, 3, 1, 2))])  # (2, 3, 1, 1): 3,1,3,3
def test_a_broadcast_first_grad_keeps_a_c_ordered_leafs_own_size_1_strides_as_torch(make, dims):
    # a C-ordered leaf whose size-1 dims have strides of their own (a permuted array): torch's
    # .grad keeps them (review45d)
    x = ember.zeros(make).permute(dims).detach().requires_grad_()
    tx = torch.zeros(make).permute(dims).detach().requires_grad_()
    x.sum().backward(), tx.sum().backward()
    assert x.stride() == tx.stride() and x.grad.stride() == tx.grad.stride()


@pytest.mark.parametrize("mode", ["enable_grad", "no_grad", "inference_mode"])
def test_backward_restores_the_grad_mode_and_callbacks_see_backwards(mode):
    from ember.autograd.engine import queue_callback

    x = f64([1.0, 2.0])
    seen = []

    def hook(g):
        seen.append(ember.is_grad_enabled())
        queue_callback(lambda: seen.append(ember.is_grad_enabled()))  # as torch's: backward's
    x.register_hook(hook)
    for create_graph in (False, True):
        y = (x * 2).sum()
        with getattr(ember, mode)():
            outer = ember.is_grad_enabled(), ember.is_inference_mode_enabled()
            y.backward(create_graph=create_graph)
            assert (ember.is_grad_enabled(), ember.is_inference_mode_enabled()) == outer
        assert seen == [create_graph] * 2
        seen.clear()
    x.register_hook(lambda g: 1 / 0)
    y = (x * 2).sum()
    with getattr(ember, mode)():
        with pytest.raises(ZeroDivisionError):
            y.backward()
        assert (ember.is_grad_enabled(), ember.is_inference_mode_enabled()) == outer


@pytest.mark.parametrize("perm", [(0, 2, 3, 1), (1, 0), (0, 2, 3, 1, 4)])
def test_first_grad_of_a_permuted_leaf_has_its_layout_and_is_no_view_as_torch(perm):
    a = np.random.default_rng(0).standard_normal([2, 3, 4, 5, 1][:len(perm)])
    back = [perm.index(i) for i in range(len(perm))]
    x = ember.tensor(a).permute(perm).contiguous().permute(back).detach().requires_grad_()
    tx = torch.tensor(a).permute(perm).contiguous().permute(back).detach().requires_grad_()
    (x * 2).sum().backward(), (tx * 2).sum().backward()
    first = x.grad
    assert first.stride() == tx.grad.stride() and not first._is_view() and not tx.grad._is_view()
    (x * 3).sum().backward(), (tx * 3).sum().backward()
    assert x.grad is first
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_create_graph_keeps_the_history_of_a_channels_last_leafs_grad_as_torch():
    # (the gradient laid out as the leaf: a permuted copy, still differentiable; review45e B1)
    results = []
    for lib in (ember, torch):
        t = lib.arange(24.0, dtype=lib.float64).reshape(1, 2, 3, 4)
        t = t.to(memory_format=lib.channels_last).requires_grad_()
        (t.contiguous() ** 3).sum().backward(create_graph=True)
        assert t.grad.requires_grad and t.grad.stride() == t.stride()
        (second,) = lib.autograd.grad(t.grad.sum(), t)
        results.append(second.detach().numpy())
    np.testing.assert_allclose(results[0], results[1])


def test_grad_inputs_passes_a_freed_node_it_does_not_run():
    # a node an earlier backward freed, reached but off every path to the inputs: torch's
    # grad(..., inputs) never runs it and answers (was: 'a second time' for MulBackward0)
    got = []
    for lib in (torch, ember):
        x, c, w, d = (lib.ones(3, requires_grad=True) for _ in range(4))
        v = x.exp() * c
        lib.autograd.grad(v.sum(), x)
        got.append(lib.autograd.grad((v + w * d).sum(), d)[0].numpy())
        with pytest.raises(RuntimeError, match="second time"):  # one it runs: refused
            lib.autograd.grad((v + w * d).sum(), x)
    np.testing.assert_array_equal(got[1], got[0])
