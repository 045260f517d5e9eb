"""Memory shared between reached tensors only after the first trace (``W.data = F[:3]``
between calls, mend51jit2): the next call traces again and runs eagerly, never stale."""

import ember
from ember import jit


def _check(make):
    results = []
    for compiled in (False, True):
        f, change = make()
        f = jit.compile(f) if compiled else f
        x = ember.ones(2)
        out = []
        for i in range(4):
            change(i)
            out.append(f(x).tolist())
        results.append(out)
    assert results[0] == results[1]


def test_view_made_after_the_first_call():
    def make():
        F, W = ember.zeros(6), ember.zeros(3)

        def f(x):
            F.add_(1.0)
            return x[:1] * W

        def change(i):
            if i == 1:
                W.data = F[:3]
        return f, change
    _check(make)


def test_whole_memory_shared_after_the_first_call():
    def make():
        W, U = ember.zeros(3), ember.zeros(3)

        def f(x):
            W.add_(1.0)
            return x[:1] * U

        def change(i):
            if i == 1:
                U.data = W.data
        return f, change
    _check(make)


def test_fresh_data_of_the_same_shape_keeps_the_graph():
    W = ember.zeros(3)
    f = jit.compile(lambda x: x * W)
    f(ember.ones(3))
    W.data = ember.ones(3)
    assert f(ember.ones(3)).tolist() == [1.0, 1.0, 1.0]
    assert f.traces == 1


def test_flat_vector_parameters_read_and_written_in_the_step_warn_when_run_eagerly():
    import warnings

    from ember import nn
    m = nn.Linear(3, 2)
    ps = list(m.parameters())
    flat = nn.utils.parameters_to_vector(ps).detach().clone()
    nn.utils.vector_to_parameters(flat, ps)
    o = ember.optim.SGD(ps, lr=0.1)
    x = ember.ones(2, 3)

    def step():
        o.zero_grad()
        m(x).sum().backward()
        o.step()
        with ember.no_grad():  # (a write besides the step's: see test_flat_buffer_step52b)
            m.bias.mul_(0.5)
        return flat.norm()

    c = jit.compile(step)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            c()
    hits = [m for m in w if "shares its memory" in str(m.message)]
    assert hits and all(m.filename == __file__ for m in hits)
