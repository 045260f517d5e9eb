"""ember.while_loop: eager values, errors and gradients against torch's while_loop; compiled
forward, generated code, and the clear error of a compiled backward."""

import numpy as np
import pytest
import torch
from torch._higher_order_ops import while_loop as torch_while_loop

import ember
from ember.errors import GradError, OpError

X = np.array([0.5, -1.0, 2.0])


def _cond(i, x):
    return i < 3


def _body(i, x):
    return i + 1, x.sin() * 2


def test_eager_values_and_gradients_match_torch():
    x = ember.tensor(X, requires_grad=True)
    i, y = ember.while_loop(_cond, _body, (ember.tensor(0), x))
    y.sum().backward()
    xt = torch.tensor(X, requires_grad=True)
    it, yt = torch_while_loop(_cond, _body, (torch.tensor(0), xt))
    yt.sum().backward()
    assert i.item() == it.item() == 3
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


def test_no_iteration_returns_copies():
    x = ember.tensor(X)
    i, y = ember.while_loop(lambda i, x: i > 5, _body, [ember.tensor(0), x])
    assert i.item() == 0 and y.tolist() == X.tolist() and y._data is not x._data


@pytest.mark.parametrize("cond_fn, body_fn, carried, message", [
    (_cond, lambda i, x: (i + 1, x.sum()), "ok", "output 1 is f64"),
    (_cond, lambda i, x: (i + 1,), "ok", "returned 1 values for 2"),
    (_cond, lambda i, x: x * 2, "ok", "must return a tuple"),
    (lambda i, x: x > 0, _body, "ok", "boolean scalar"),
    (_cond, lambda i, x: (i + 1, x), "ok", "aliases"),
    (_cond, _body, "tensor", "tuple or list of tensors"),
    (3, _body, "ok", "callable"),
])
def test_errors(cond_fn, body_fn, carried, message):
    x = ember.tensor(X)
    carried = (ember.tensor(0), x) if carried == "ok" else x
    with pytest.raises(OpError, match=message):
        ember.while_loop(cond_fn, body_fn, carried)


def _count_to(n, x):
    return ember.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x.cos() + x),
                            (ember.tensor(0), x))


def test_compiled_loop_runs_a_data_dependent_trip_count():
    fast = ember.jit.compile(_count_to)
    x = ember.tensor(X)
    for n in (4, 0, 2):
        got, want = fast(ember.tensor(n), x), _count_to(ember.tensor(n), x)
        assert got[0].item() == n
        np.testing.assert_allclose(got[1].numpy(), want[1].numpy(), rtol=1e-12)
    assert "while_loop(" in str(fast.graph) and "graph body_fn(" in str(fast.graph)
    code = fast.code
    assert "while while_loop_cond(" in code and "def while_loop_body(" in code
    assert "test_while_loop.py" in code.splitlines()[
        next(i for i, line in enumerate(code.splitlines()) if "xp.array(" in line)]


def test_compiled_backward_raises_clearly():
    x = ember.tensor(X, requires_grad=True)
    fast = ember.jit.compile(lambda x: _count_to(ember.tensor(2), x)[1].sum())
    with pytest.raises(GradError, match="while_loop.*eager code"):
        fast(x).backward()


def test_vmap_runs_each_sample_its_own_trip_count():
    n, x = ember.tensor([0, 2, 5]), ember.tensor(np.stack([X, -X, 2 * X]))
    i, y = ember.vmap(_count_to)(n, x)
    assert i.tolist() == [0, 2, 5]
    for k in range(3):
        np.testing.assert_allclose(y[k].numpy(), _count_to(n[k], x[k])[1].numpy(), rtol=1e-12)
    np.testing.assert_allclose(ember.jit.compile(ember.vmap(_count_to))(n, x)[1].numpy(),
                               y.numpy(), rtol=1e-12)


def test_writing_a_carried_value_in_the_body_raises():
    with pytest.raises(OpError, match="body_fn writes in place into its operand"):
        ember.while_loop(lambda x: x.sum() < 10, lambda x: (x.add_(1) * 1,), (ember.ones(2),))
