"""The autograd hook API against PyTorch's: post-accumulate-grad hooks, ``grad_fn``
(``next_functions``, ``AccumulateGrad``, node pre/post hooks), tensor hooks (grad mode inside
them, removal during backward, ``create_graph``), ``retain_grad`` and ``deepcopy`` of views."""

import copy

import numpy as np
import pytest
import torch

import ember
from ember.errors import GradError

LIBS = (ember, torch)


def _arr(t):
    return None if t is None else np.array(t.detach())


def _pair(lib, values=(1.0, 2.0)):
    return lib.tensor(list(values), requires_grad=True), lib.tensor([3.0, 4.0],
                                                                   requires_grad=True)


# -- register_post_accumulate_grad_hook ------------------------------------------------------
def test_post_accumulate_grad_hook_sees_the_sum_in_grad_like_torch():
    seen = {}
    for lib in LIBS:
        x, _ = _pair(lib)
        seen[lib] = []
        h = x.register_post_accumulate_grad_hook(lambda t, s=seen[lib]: s.append(_arr(t.grad)))
        (x * 2).sum().backward()
        (x * 3).sum().backward(inputs=[x])
        lib.autograd.grad((x * 5).sum(), x)          # touches no .grad: no call
        h.remove()
        (x * 7).sum().backward()
    assert len(seen[ember]) == len(seen[torch]) == 2
    for a, b in zip(seen[ember], seen[torch]):
        np.testing.assert_array_equal(a, b)


def test_post_accumulate_grad_hook_can_step_in_backward():
    # the optimizer-in-backward pattern: update each parameter as its grad lands
    for lib in LIBS:
        w = lib.tensor([1.0, 2.0], requires_grad=True)

        def step(p, lib=lib):
            with lib.no_grad():
                p.sub_(0.5 * p.grad)
            p.grad = None
        w.register_post_accumulate_grad_hook(step)
        (w * w).sum().backward()
        assert w.grad is None and w.tolist() == [0.0, 0.0]


def test_post_accumulate_grad_hook_is_refused_where_torch_refuses():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(GradError, match="computed by MulBackward.*leaves only"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(GradError, match="does not require grad"):
        ember.ones(2).register_post_accumulate_grad_hook(lambda t: None)
    x.register_post_accumulate_grad_hook(lambda t: 1)
    with pytest.raises(GradError, match="returned a value"):
        (x * 2).sum().backward()


# -- grad_fn: next_functions, AccumulateGrad, node hooks -------------------------------------
def test_next_functions_mirror_torch_and_survive_backward():
    shapes = {}
    for lib in LIBS:
        x, w = _pair(lib)
        c = lib.ones(2)
        z = (x * w + c).sum()
        add = z.grad_fn.next_functions[0][0]
        mul = add.next_functions[0][0]
        acc_x, acc_w = (f for f, _ in mul.next_functions)
        assert add.next_functions[1] == (None, 0)
        assert acc_x.variable is x and acc_w.variable is w
        assert acc_x.next_functions == ()
        assert acc_x.name() == "torch::autograd::AccumulateGrad"
        assert (x * 3).grad_fn.next_functions[0][0] is acc_x     # one per leaf
        z.backward()
        shapes[lib] = [len(z.grad_fn.next_functions), len(mul.next_functions)]
    assert shapes[ember] == shapes[torch] == [1, 2]


def test_node_prehook_and_hook_replace_gradients_like_torch():
    got = {}
    for lib in LIBS:
        x, w = _pair(lib)
        y = x * w
        calls = []
        y.grad_fn.register_prehook(lambda go, c=calls: c.append("pre") or (go[0] * 10,))
        y.grad_fn.register_hook(lambda gi, go, c=calls: c.append(("post", _arr(go[0])))
                                or (gi[0] + 1, None))
        y.register_hook(lambda g, c=calls: c.append("tensor") or g * 2)
        y.retain_grad()
        y.sum().backward()
        got[lib] = (calls[:2], calls[2][1], _arr(y.grad), _arr(x.grad), w.grad)
    assert got[ember][0] == got[torch][0] == ["tensor", "pre"]
    for a, b in zip(got[ember][1:4], got[torch][1:4]):
        np.testing.assert_array_equal(a, b)
    assert got[ember][4] is None and got[torch][4] is None


def test_node_hooks_of_a_leaf_accumulator_run_in_torch_order():
    order = {}
    for lib in LIBS:
        x, _ = _pair(lib)
        y = x * 2
        acc = y.grad_fn.next_functions[0][0]
        log = order[lib] = []
        x.register_hook(lambda g, log=log: log.append("tensor"))
        acc.register_prehook(lambda go, log=log: log.append("pre") or (go[0] * 3,))
        x.register_post_accumulate_grad_hook(lambda t, log=log: log.append(("acc", _arr(t.grad))))
        acc.register_hook(lambda gi, go, log=log: log.append(("post", len(gi))))
        y.sum().backward()
    assert order[ember][:2] == order[torch][:2] == ["tensor", "pre"]
    np.testing.assert_array_equal(order[ember][2][1], order[torch][2][1])
    assert order[ember][3] == order[torch][3] == ("post", 0)


def test_node_hooks_are_removable_and_checked():
    x, w = _pair(ember)
    y = x * w
    h = y.grad_fn.register_prehook(lambda go: pytest.fail("removed"))
    h.remove()
    y.grad_fn.register_hook(lambda gi, go: (gi[0],))
    with pytest.raises(GradError, match=r"hook of MulBackward0 .* returned 1 values; expected "
                                        r"None or a tuple of 2"):
        y.sum().backward()
    y = x * w
    y.grad_fn.register_prehook(lambda go: (go[0].double(),))
    with pytest.raises(GradError, match="dtype float64 for a gradient of dtype float32"):
        y.sum().backward()


def test_node_hooks_under_create_graph_are_differentiable_like_torch():
    got = {}
    for lib in LIBS:
        x, w = _pair(lib)
        z = x * w
        modes = []
        z.grad_fn.register_hook(lambda gi, go, w=w, m=modes, lib=lib: m.append(
            lib.is_grad_enabled()) or (gi[0] * w, gi[1]))
        z.sum().backward(create_graph=True)
        got[lib] = (modes, _arr(x.grad), _arr(lib.autograd.grad(x.grad.sum(), w)[0]))
    assert got[ember][0] == got[torch][0] == [True]
    for a, b in zip(got[ember][1:], got[torch][1:]):
        np.testing.assert_array_equal(a, b)


# -- tensor hooks ----------------------------------------------------------------------------
def test_hooks_run_with_backwards_grad_mode_in_grad_too():
    # (a leaf's hook under autograd.grad ran with the caller's grad mode, recording its ops)
    seen = {}
    for lib in LIBS:
        x, _ = _pair(lib)
        seen[lib] = []
        x.register_hook(lambda g, s=seen[lib], lib=lib: s.append((lib.is_grad_enabled(),
                                                                   g.requires_grad)) or g * 3)
        (g1,) = lib.autograd.grad((x * x).sum(), x)
        (g2,) = lib.autograd.grad((x * x).sum(), x, create_graph=True)
        seen[lib].append((g1.requires_grad, g2.requires_grad))
    assert seen[ember] == seen[torch] == [(False, False), (True, True), (False, True)]


def test_a_hook_removed_during_backward_still_runs_in_that_pass_like_torch():
    for lib in LIBS:
        x, _ = _pair(lib)
        y = x * 2
        log, handles = [], {}
        handles["a"] = y.register_hook(lambda g, log=log, handles=handles: log.append("a")
                                       or handles["b"].remove())
        handles["b"] = y.register_hook(lambda g, log=log: log.append("b"))
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        assert log == ["a", "b", "a"]


def test_a_hook_may_not_change_the_gradients_dtype_as_in_torch():
    x = ember.ones(2, requires_grad=True)
    x.register_hook(lambda g: g.double())
    with pytest.raises(GradError, match="dtype float64 for a gradient of dtype float32"):
        (x * 2).sum().backward()
    t = torch.ones(2, requires_grad=True)
    t.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError, match="type"):
        (t * 2).sum().backward()


# -- retain_grad -----------------------------------------------------------------------------
def test_retain_grad_follows_an_in_place_op_like_torch():
    got = {}
    for lib in LIBS:
        x, _ = _pair(lib)
        y = x * 2
        y.retain_grad()
        hooked = []
        y.register_hook(lambda g, h=hooked: h.append(_arr(g)))  # stays with the old value
        y.mul_(3)
        (y * y).sum().backward()
        got[lib] = (_arr(y.grad), hooked[0], y.retains_grad)
    np.testing.assert_array_equal(got[ember][0], got[torch][0])
    np.testing.assert_array_equal(got[ember][1], got[torch][1])
    assert got[ember][2] and got[torch][2]


def test_retain_grad_without_requires_grad_is_refused_as_in_torch():
    with pytest.raises(RuntimeError):
        torch.ones(2).retain_grad()
    with pytest.raises(GradError, match="does not require grad"):
        ember.ones(2).retain_grad()
    leaf = ember.ones(2, requires_grad=True)
    leaf.retain_grad()                                   # a leaf: nothing to do
    assert not leaf.retains_grad


def test_np_array_of_a_tensor_is_a_copy_like_torch():
    # (np.array ignored NumPy 2's copy=True and handed out the tensor's own memory)
    for lib in LIBS:
        t = lib.ones(2)
        np.array(t)[0] = 5.0
        assert t.tolist() == [1.0, 1.0]
        np.asarray(t)[0] = 5.0                            # asarray shares, on the CPU
        assert t.tolist() == [5.0, 1.0]
    assert np.array(ember.ones(2), dtype=np.float64).dtype == np.float64


# -- deepcopy of a tensor with its views -----------------------------------------------------
def test_deepcopy_keeps_a_view_on_the_copied_memory_like_torch():
    for lib in LIBS:
        x = lib.arange(6.0).reshape(2, 3)
        a, b = copy.deepcopy([x, x[0]])
        b.mul_(10)
        assert a.tolist() == [[0.0, 10.0, 20.0], [3.0, 4.0, 5.0]]
        assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        c, d = copy.deepcopy([x[1], x])                  # the view first
        c.fill_(-1)
        assert d.tolist() == [[0.0, 1.0, 2.0], [-1.0, -1.0, -1.0]]


def test_deepcopy_keeps_dtype_views_and_storage_offsets_like_torch():
    for lib in LIBS:
        f = lib.ones(4)
        kept = copy.deepcopy({"base": f, "bits": f.view(lib.int32), "tail": f[2:]})
        kept["base"][0] = 5.0
        assert kept["bits"][0].item() == 1084227584 and kept["bits"].dtype == lib.int32
        kept["tail"].fill_(2.0)
        assert kept["base"].tolist() == [5.0, 1.0, 2.0, 2.0] and f.tolist() == [1.0] * 4
        assert kept["tail"].storage_offset() == 2
        bits, base = copy.deepcopy([f.view(lib.int32), f])  # the dtype view first
        base.fill_(0.0)
        assert bits.tolist() == [0, 0, 0, 0]
    for lib in LIBS:  # a slice copied alone keeps its whole memory, as a storage is copied
        tail = copy.deepcopy(lib.arange(4.0)[2:])
        assert tail.tolist() == [2.0, 3.0] and tail.storage_offset() == 2


def test_deepcopy_of_a_view_of_a_parameter_shares_the_copied_parameter():
    w = ember.ones(3, requires_grad=True)
    with ember.no_grad():
        v = w[1:]
    w2, v2 = copy.deepcopy([w, v])
    assert w2.requires_grad and w2 is not w
    with ember.no_grad():
        v2.mul_(5)
    assert w2.tolist() == [1.0, 5.0, 5.0] and w.tolist() == [1.0, 1.0, 1.0]
    assert v2._view is None                               # no view for autograd, as torch


def test_deepcopy_of_a_module_keeps_a_buffer_that_views_another_like_torch():
    for lib, mod in ((ember, ember.nn), (torch, torch.nn)):
        m = mod.Module()
        m.register_buffer("full", lib.zeros(4))
        m.register_buffer("part", m.full[:2])
        m2 = copy.deepcopy(m)
        m2.part.fill_(1)
        assert m2.full.tolist() == [1.0, 1.0, 0.0, 0.0] and m.full.tolist() == [0.0] * 4


def test_a_node_hook_may_not_put_a_gradient_where_there_was_none_as_in_torch():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * lib.tensor([2.0, 2.0])  # the constant's gradient is None
        y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0]))
        y.sum().backward()
    with pytest.raises(RuntimeError, match="can't replace a None gradient"):
        run(torch)
    with pytest.raises(GradError, match="cannot replace a None gradient with a tensor"):
        run(ember)
