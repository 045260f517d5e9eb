"""A compiled function given (or capturing) a tensor with history reads no ``.grad`` aloud: the
tracer's own look at the ``.grad`` of arguments and captured tensors must not raise PyTorch's
non-leaf ``.grad`` warning, which only user code reading ``.grad`` should see."""

import warnings

import ember


def test_compiled_call_on_non_leaf_arguments_warns_nothing():
    x = ember.ones(3, requires_grad=True)
    captured = x * 5

    @ember.compile
    def f(a):
        return (a * captured).sum()

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            f(x * 3).backward()
    assert [str(w.message) for w in record if "not a leaf" in str(w.message)] == []
    assert x.grad.tolist() == [90.0, 90.0, 90.0]
