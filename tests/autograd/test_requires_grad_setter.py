"""Setting ``tensor.requires_grad``: checked as ``requires_grad_()`` and as in PyTorch."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("case", ["integer", "non-leaf False", "non-leaf True", "int 1",
                                  "None", "numpy bool"])
def test_setting_requires_grad_is_checked_as_in_torch(case):
    def set_it(lib):
        leaf = lib.ones(2, dtype=lib.float64)
        tensor, value = {
            "integer": (lib.ones(2, dtype=lib.int64), True),
            "non-leaf False": (lib.ones(2, requires_grad=True) * 2, False),
            "non-leaf True": (lib.ones(2, requires_grad=True) * 2, True),
            "int 1": (leaf, 1), "None": (leaf, None), "numpy bool": (leaf, np.True_)}[case]
        tensor.requires_grad = value

    with pytest.raises(RuntimeError):
        set_it(torch)
    with pytest.raises(RuntimeError, match="requires_grad"):
        set_it(ember)


def test_setting_requires_grad_on_leaves_works_and_is_read_by_ops():
    w = ember.ones(3, dtype=ember.int64)
    w.requires_grad = False  # allowed, as in torch
    x = ember.ones(3)[:2].detach()[:1]  # a view made a leaf
    x.requires_grad = True
    (x * 3).sum().backward()
    assert x.is_leaf and x.grad.tolist() == [3.0]
    x.requires_grad = False
    assert (x * 3).grad_fn is None


@pytest.mark.parametrize("kind", ["nested", "sparse"])
def test_nested_and_sparse_tensors_take_requires_grad_as_torch(kind):
    results = []
    for lib in (torch, ember):
        if kind == "nested":
            t = lib.nested.nested_tensor([lib.ones(2, 3), lib.ones(4, 3)], layout=lib.jagged)
            t.requires_grad = True  # (there was no setter: AttributeError)
            (t * 2).values().sum().backward()
            grad = t.grad.values().sum().item()
        else:
            t = lib.tensor([0.0, 2.0, 3.0]).to_sparse()
            t.requires_grad = True
            lib.sparse.sum(t * 3).backward()
            grad = t.grad.to_dense().tolist()
        with pytest.raises(RuntimeError):
            (t * 2).requires_grad = False  # (a computed one, as a tensor's)
        with pytest.raises(RuntimeError):
            t.requires_grad = 1
        results.append((t.requires_grad, t.is_leaf, grad))
    assert results[0] == results[1]


@pytest.mark.parametrize("op", ["linear", "matmul", "mul", "add", "conv"])
def test_requires_grad_turned_off_between_forward_and_backward_leaves_grad_none(op):
    # torch's AccumulateGrad reads requires_grad at backward: no sum into .grad (review57m5)
    def run(lib):
        w = lib.nn.Parameter(lib.full((2, 2), 2.0))
        x = lib.ones(1, 2, requires_grad=True)
        y = {"linear": lambda: lib.nn.functional.linear(x, w),
             "matmul": lambda: x @ w, "mul": lambda: w * x, "add": lambda: w + x,
             "conv": lambda: lib.nn.functional.conv2d(x.reshape(1, 1, 1, 2),
                                                      w.reshape(2, 1, 1, 2))}[op]()
        w.requires_grad_(False)
        y.sum().backward()
        return w.grad, x.grad.numpy()

    (tw, tx), (ew, ex) = run(torch), run(ember)
    assert tw is None and ew is None
    np.testing.assert_allclose(ex, tx)


@pytest.mark.parametrize("op", ["linear", "mul", "x @ w", "w @ x", "mm", "conv1d", "conv2d"])
def test_requires_grad_turned_off_runs_the_leaf_hooks_where_the_rule_made_its_gradient(op):
    # linear's rule computes w's gradient anyway: its hooks run, as torch's. The other rules
    # read w's flag at backward and compute none: neither hook runs, where torch runs both
    # (the difference docs/tensors_and_autograd.md names)
    def run(lib):
        shape = {"conv1d": (2, 2, 2), "conv2d": (2, 2, 2, 2)}.get(op, (2, 2))
        w = lib.full(shape, 2.0, requires_grad=True)
        calls = []
        w.register_hook(lambda g: calls.append("pre"))
        w.register_post_accumulate_grad_hook(lambda p: calls.append(p.grad))
        x = lib.ones(2, 2, requires_grad=True)
        f = lib.nn.functional
        y = {"linear": lambda: f.linear(x, w), "mul": lambda: x * w, "x @ w": lambda: x @ w,
             "w @ x": lambda: w @ x, "mm": lambda: x.mm(w),
             "conv1d": lambda: f.conv1d(lib.ones(1, 2, 4, requires_grad=True), w),
             "conv2d": lambda: f.conv2d(lib.ones(1, 2, 4, 4, requires_grad=True), w)}[op]()
        w.requires_grad_(False)
        y.sum().backward()
        return calls

    assert run(torch) == ["pre", None]
    assert run(ember) == (["pre", None] if op == "linear" else [])
