"""ember.utils.hooks: the one RemovableHandle every registration returns (ids, context
manager, PyTorch's dict form with extra_dict), unserializable_hook and warn_if_has_hooks
(which pickling a tensor calls)."""

import pickle
import warnings
import weakref

import pytest

import ember
from ember import nn
from ember.utils.hooks import RemovableHandle, unserializable_hook, warn_if_has_hooks


def test_every_registration_returns_the_public_handle_with_unique_ids():
    x = ember.ones(2, requires_grad=True)
    m = nn.Linear(2, 2)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    handles = [x.register_hook(lambda g: g), m.register_forward_hook(lambda *a: None),
               opt.register_step_pre_hook(lambda *a: None),
               (x * 2).grad_fn.register_prehook(lambda go: None)]
    assert all(type(h) is RemovableHandle for h in handles)
    assert len({h.id for h in handles}) == len(handles)


def test_removal_twice_and_as_a_context_manager():
    x = ember.ones(2, requires_grad=True)
    twice = lambda g: g * 2  # noqa: E731 - registered twice: each handle removes its own
    first, second = x.register_hook(twice), x.register_hook(twice)
    first.remove()
    first.remove()
    (x * 1).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    with second:
        pass
    x.grad = None
    (x * 1).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_dict_form_removes_from_extra_dicts():
    hooks, extra_a, extra_b = {}, {}, {}
    handle = RemovableHandle(hooks, extra_dict=[extra_a, extra_b])
    hooks[handle.id] = extra_a[handle.id] = extra_b[handle.id] = print
    other = RemovableHandle(hooks, extra_dict=extra_a)
    hooks[other.id] = extra_a[other.id] = print
    handle.remove()
    assert list(hooks) == [other.id] and list(extra_a) == [other.id] and not extra_b
    other.remove()
    assert not hooks and not extra_a
    assert "RemovableHandle id=" in repr(other)


def test_pickling_a_tensor_with_hooks_warns_unless_marked():
    x = ember.ones(2, requires_grad=True)
    handle = x.register_hook(lambda g: g)
    with pytest.warns(UserWarning, match="will not be serialized.*unserializable_hook"):
        pickle.dumps(x)
    handle.remove()
    y = (x * 2)
    y.register_hook(unserializable_hook(lambda g: g))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_has_hooks(y)
        assert ember.equal(pickle.loads(pickle.dumps(x)), x)


def test_a_removed_hook_is_freed_while_its_handle_is_kept():
    # as PyTorch's: the handle does not keep the hook (nor what its closure holds) alive
    class Payload:
        pass

    x = ember.ones(2, requires_grad=True)
    y = x * 2
    opt = ember.optim.SGD([x], lr=0.1)
    for register in (x.register_hook, y.register_hook,
                     x.register_post_accumulate_grad_hook,
                     lambda hook: opt.register_step_post_hook(lambda *a: hook(None))):
        payload = Payload()
        ref = weakref.ref(payload)
        handle = register(lambda g, payload=payload: None)
        del payload
        handle.remove()
        assert ref() is None
        handle.remove()  # (still a no-op)
