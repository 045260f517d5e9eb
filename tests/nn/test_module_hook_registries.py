"""nn.Module's hook registries as PyTorch keeps them (OrderedDicts from handle id to the user's
hook, flags in side dicts, global dicts in ``nn.modules.module``): the idioms code written
against PyTorch's internals uses, run side by side on Ember and torch."""

import copy
import pickle
from collections import OrderedDict

import torch

import ember
from ember import jit
from ember.nn.module_hooks import HOOK_DICTS
from ember.utils.hooks import RemovableHandle

LIBS = ((ember.nn, ember), (torch.nn, torch))


def _both(scenario):
    """The scenario's log on Ember and on torch (they must be equal)."""
    ours, theirs = (scenario(nn, lib) for nn, lib in LIBS)
    assert ours == theirs
    return ours


class _Marker:
    """A hook class, as prune's and weight_norm's methods are: found by isinstance."""

    def __init__(self, log, name):
        self.log, self.name = log, name

    def __call__(self, module, args):
        self.log.append(self.name)


def test_registries_are_ordered_dicts_from_handle_id_to_the_users_hook():
    def scenario(nn, lib):
        m = nn.Linear(2, 2)
        pre, post = (lambda mod, a: None), (lambda mod, a, o: None)
        hp = m.register_forward_pre_hook(pre)
        m.register_forward_hook(post)
        hb = m.register_full_backward_hook(lambda mod, gi, go: None)
        hbp = m.register_full_backward_pre_hook(lambda mod, go: None)
        hs = m.register_state_dict_post_hook(lambda *a: None)
        registries = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks",
                      "_backward_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                      "_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                      "_forward_hooks_always_called")
        assert all(isinstance(getattr(m, r), OrderedDict) for r in registries)
        assert list(m._forward_pre_hooks.items()) == [(hp.id, pre)]
        assert list(m._forward_hooks.values()) == [post]
        assert [list(d) for d in (m._backward_hooks, m._backward_pre_hooks,
                                  m._state_dict_hooks)] == [[hb.id], [hbp.id], [hs.id]]
        return [len(getattr(m, r)) for r in registries]

    assert _both(scenario) == [1, 1, 1, 1, 1, 0, 0, 0, 0]


def test_deleting_hooks_found_by_type_as_prune_and_weight_norm_do():
    def scenario(nn, lib):
        m, log = nn.Identity(), []
        for name in ("a", "b", "c"):
            m.register_forward_pre_hook(_Marker(log, name))
        m.register_forward_pre_hook(lambda mod, args: log.append("plain"))
        for k, hook in list(m._forward_pre_hooks.items()):
            if isinstance(hook, _Marker) and hook.name != "b":
                del m._forward_pre_hooks[k]
        m(lib.ones(1))
        return log, [type(h).__name__ for h in m._forward_pre_hooks.values()]

    assert _both(scenario) == (["b", "plain"], ["_Marker", "function"])


def test_prepend_moves_the_hook_to_the_front_of_the_dict_and_of_the_calls():
    def scenario(nn, lib):
        m, log = nn.Identity(), []
        first = m.register_forward_hook(lambda mod, a, o: log.append("first"))
        front = m.register_forward_hook(lambda mod, a, o: log.append("front"), prepend=True)
        m.register_forward_pre_hook(lambda mod, a: log.append("pre 1"))
        m.register_forward_pre_hook(lambda mod, a: log.append("pre 0"), prepend=True)
        m._forward_hooks.move_to_end(front.id)  # (by hand, as PyTorch's prepend does it)
        m(lib.ones(1))
        return log, list(m._forward_hooks) == [first.id, front.id]

    assert _both(scenario) == (["pre 0", "pre 1", "first", "front"], True)


def test_flags_live_in_side_dicts_that_remove_cleans():
    def scenario(nn, lib):
        m, log = nn.Identity(), []
        hp = m.register_forward_pre_hook(lambda mod, a, k: log.append(sorted(k)),
                                         with_kwargs=True)
        hf = m.register_forward_hook(lambda mod, a, k, o: log.append(("post", sorted(k))),
                                     with_kwargs=True, always_call=True)
        plain = m.register_forward_hook(lambda mod, a, o: log.append("plain"))
        flags = [dict(m._forward_pre_hooks_with_kwargs) == {hp.id: True},
                 dict(m._forward_hooks_with_kwargs) == {hf.id: True},
                 dict(m._forward_hooks_always_called) == {hf.id: True}]
        m(lib.ones(1))
        del m._forward_hooks_with_kwargs[hf.id]  # (now called without kwargs)
        m._forward_hooks[hf.id] = lambda mod, a, o: log.append("post, no kwargs")
        m(lib.ones(1))
        hp.remove()
        hf.remove()
        plain.remove()
        return log, flags, [len(getattr(m, r)) for r in (
            "_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
            "_forward_hooks_always_called", "_forward_pre_hooks", "_forward_hooks")]

    log, flags, sizes = _both(scenario)
    assert flags == [True] * 3 and sizes == [0] * 5
    assert log == [[], ("post", []), "plain", [], "post, no kwargs", "plain"]


def test_always_call_by_the_side_dict_runs_when_forward_raises():
    def scenario(nn, lib):
        class Failing(nn.Module):
            def forward(self, x):
                raise ValueError("no")

        m, log = Failing(), []
        h = m.register_forward_hook(lambda mod, a, o: log.append(("hook", o)))
        try:
            m(lib.ones(1))
        except ValueError:
            log.append("raised")
        m._forward_hooks_always_called[h.id] = True
        try:
            m(lib.ones(1))
        except ValueError:
            log.append("raised")
        return log

    assert _both(scenario) == ["raised", ("hook", None), "raised"]


def test_values_len_and_clear():
    def scenario(nn, lib):
        m, log = nn.Identity(), []
        hooks = [lambda mod, a, o, i=i: log.append(i) for i in range(3)]
        for hook in hooks:
            m.register_forward_hook(hook)
        same = list(m._forward_hooks.values()) == hooks
        n = len(m._forward_hooks)
        m(lib.ones(1))
        m._forward_hooks.clear()
        m(lib.ones(1))
        return same, n, log

    assert _both(scenario) == (True, 3, [0, 1, 2])
    m = ember.nn.Identity()
    m.register_forward_hook(lambda *a: None)
    m._forward_hooks.clear()
    assert not m._forward_hooks  # (so the call takes the fast path again)


def test_global_registries_are_dicts_in_nn_modules_module():
    def scenario(nn, lib):
        mm, log = nn.modules.module, []
        h = mm.register_module_forward_hook(lambda mod, a, o: log.append("global"))
        hk = mm.register_module_forward_hook(lambda mod, a, k, o: log.append("kw"),
                                             with_kwargs=True, always_call=True)
        pre = mm.register_module_forward_pre_hook(lambda mod, a: log.append("pre"))
        kinds = [isinstance(d, OrderedDict) for d in (
            mm._global_forward_hooks, mm._global_forward_pre_hooks,
            mm._global_backward_hooks, mm._global_backward_pre_hooks,
            mm._global_forward_hooks_with_kwargs, mm._global_forward_hooks_always_called,
            mm._global_parameter_registration_hooks, mm._global_buffer_registration_hooks,
            mm._global_module_registration_hooks)]
        marked = (hk.id in mm._global_forward_hooks_with_kwargs,
                  hk.id in mm._global_forward_hooks_always_called)
        nn.Identity()(lib.ones(1))
        del mm._global_forward_hooks[h.id]  # (by hand; the handle does nothing then)
        nn.Identity()(lib.ones(1))
        for handle in (h, hk, pre):
            handle.remove()
        nn.Identity()(lib.ones(1))
        return log, all(kinds), marked, hk.id in mm._global_forward_hooks_always_called

    assert _both(scenario) == (["pre", "global", "kw", "pre", "kw"], True, (True, True), False)
    # (torch's handle leaves its id in _global_forward_hooks_with_kwargs; Ember's cleans it)
    hk = ember.nn.register_module_forward_hook(lambda mod, a, k, o: None, with_kwargs=True)
    hk.remove()
    assert hk.id not in ember.nn.modules.module._global_forward_hooks_with_kwargs


def test_emptying_a_global_registry_by_hand_brings_back_the_fast_call_path():
    mm = ember.nn.modules.module
    h = mm.register_module_forward_hook(lambda mod, a, o: None)
    assert ember.nn.Linear.__call__ is not ember.nn.Module._call_fast
    del mm._global_forward_hooks[h.id]
    assert ember.nn.Linear.__call__ is ember.nn.Module._call_fast
    h.remove()  # (nothing left to remove)


def test_state_dict_registries_hold_what_torchs_hold():
    def scenario(nn, lib):
        m, log = nn.Linear(2, 1), []
        post = m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: log.append("sd"))
        pre = m.register_load_state_dict_pre_hook(
            lambda mod, sd, prefix, *rest: log.append(("load", type(mod).__name__)))
        bare = m._register_load_state_dict_pre_hook(lambda sd, prefix, *rest: log.append(prefix))
        wrapped = m._load_state_dict_pre_hooks[pre.id]
        kinds = (type(m._state_dict_hooks[post.id]).__name__, type(wrapped).__name__,
                 callable(wrapped.hook))
        m.load_state_dict(m.state_dict())
        for handle in (post, pre, bare):
            handle.remove()
        m.load_state_dict(m.state_dict())
        return log, kinds, len(m._state_dict_hooks) + len(m._load_state_dict_pre_hooks)

    log, kinds, left = _both(scenario)
    assert log == ["sd", ("load", "Linear"), ""] and left == 0
    assert kinds == ("function", "_WrappedHook", True)


def _double(module, args, output):  # (module level: picklable)
    return output * 2


def _load_hook(module, state_dict, prefix, *rest):
    module.loaded_into = True


def test_deepcopy_and_pickle_keep_the_registries():
    def scenario(nn, lib):
        m = nn.Linear(2, 2)
        m.register_forward_hook(_double, always_call=True)
        m.register_load_state_dict_pre_hook(_load_hook)
        out = []
        for twin in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
            assert list(twin._forward_hooks.values()) == [_double]
            assert list(twin._forward_hooks_always_called) == list(m._forward_hooks)
            twin.load_state_dict(m.state_dict())  # (the copy's pre-hook sees the copy)
            out.append((getattr(twin, "loaded_into", False), getattr(m, "loaded_into", False)))
        return out

    assert _both(scenario) == [(True, False), (True, False)]


def test_a_compiled_module_notices_a_hook_deleted_by_hand():
    model, x = ember.nn.Linear(3, 2), ember.randn(4, 3)
    fast = jit.compile(model)
    handle = model.register_forward_hook(_double)
    with ember.no_grad():
        ember.testing.assert_close(fast(x), model.forward(x) * 2)
        del model._forward_hooks[handle.id]
        ember.testing.assert_close(fast(x), model.forward(x))
        model.register_forward_hook(lambda mod, a, k, o: o * 3, with_kwargs=True)
        ember.testing.assert_close(fast(x), model.forward(x) * 3)


def test_a_lazy_module_keeps_its_hooks_and_their_flags_as_it_becomes_the_layer():
    def scenario(nn, lib):
        m, log = nn.LazyLinear(2), []
        m.register_forward_hook(lambda mod, a, k, o: log.append((type(mod).__name__, sorted(k))),
                                with_kwargs=True, always_call=True)
        m(lib.ones(1, 3))
        m(lib.ones(1, 3))
        return log, len(m._forward_hooks_with_kwargs), len(m._forward_hooks_always_called)

    assert _both(scenario) == ([("Linear", [])] * 2, 1, 1)


def test_a_module_unpickled_without_some_registry_gets_an_empty_one():
    state = dict(vars(ember.nn.Identity()))
    del state["_forward_hooks_always_called"], state["_forward_pre_hooks_with_kwargs"]
    m = object.__new__(ember.nn.Identity)
    m.__setstate__(state)  # (as a module pickled before the registry existed)
    m.register_forward_hook(_double, always_call=True)
    assert m(ember.ones(1)).tolist() == [2.0] and len(m._forward_hooks_always_called) == 1


def _drop_bias(module, state_dict, prefix, local_metadata):
    del state_dict[prefix + "bias"]


def test_a_module_pickled_by_ember_before_the_dicts_loads_with_working_registries():
    # Ember kept the six registries as lists before; a module without hooks saved then
    # unpickles with them empty (entries of the old kind cannot unpickle at all)
    state = dict(vars(ember.nn.Linear(2, 2)))
    for name in ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks",
                 "_backward_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks"):
        state[name] = []
    for name in ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                 "_forward_hooks_always_called"):
        del state[name]
    m = object.__new__(ember.nn.Linear)
    m.__setstate__(state)
    assert all(isinstance(getattr(m, r), OrderedDict) for r in HOOK_DICTS)
    h = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    m.register_state_dict_post_hook(_drop_bias)
    x = ember.ones(1, 2)
    ember.testing.assert_close(m(x), m.forward(x * 2))
    h.remove()
    assert list(m.state_dict()) == ["weight"] and not m._forward_pre_hooks


def test_a_compiled_module_sees_hooks_put_in_a_registry_replaced_by_a_plain_dict():
    # (``module._forward_hooks = OrderedDict()`` is how much PyTorch code strips hooks)
    model, x = ember.nn.Linear(3, 2), ember.randn(4, 3)
    fast = jit.compile(model)
    with ember.no_grad():
        model._forward_hooks = OrderedDict()
        ember.testing.assert_close(fast(x), model.forward(x))
        model.register_forward_hook(_double)
        ember.testing.assert_close(fast(x), model.forward(x) * 2)
        model._forward_hooks[-1] = lambda mod, args, out: out * 5  # (by hand, as torch code)
        ember.testing.assert_close(fast(x), model.forward(x) * 10)
        ember.testing.assert_close(model(x), model.forward(x) * 10)


def test_hooks_registered_after_unpickling_never_take_an_unpickled_hooks_key():
    # a module unpickled in a fresh process holds keys its handle counter has not reached yet:
    # a later registration must not overwrite the unpickled hook under the same key
    m = ember.nn.Identity()
    m.register_forward_hook(_double)
    state = dict(vars(m))
    ahead = RemovableHandle({}).id + 3  # (as if saved by a process that had made more handles)
    state["_forward_hooks"] = OrderedDict({ahead: _double})
    state["_forward_hooks_always_called"] = OrderedDict({ahead: True})
    twin = object.__new__(ember.nn.Identity)
    twin.__setstate__(state)
    for _ in range(6):
        twin.register_forward_hook(lambda mod, args, out: out + 1)
    assert twin._forward_hooks[ahead] is _double and len(twin._forward_hooks) == 7
    assert list(twin._forward_hooks_always_called) == [ahead]
    assert twin(ember.ones(1)).tolist() == [8.0]


def test_state_dict_pre_hooks_and_load_post_hooks_as_torch():
    def run(lib):
        log = []
        model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.Linear(2, 1)))
        for name, m in model.named_modules():
            m.register_state_dict_pre_hook(
                lambda mod, prefix, keep, name=name: log.append(("pre", name, prefix, keep)))
            m.register_load_state_dict_post_hook(
                lambda mod, keys, name=name: log.append(("post", name, list(keys.missing_keys),
                                                         list(keys.unexpected_keys))))
        state = model.state_dict(keep_vars=True)
        del state["1.0.bias"]
        state["extra"] = state["0.bias"]
        result = model.load_state_dict(state, strict=False)
        model[1][0].register_load_state_dict_post_hook(
            lambda mod, keys: keys.missing_keys.remove("1.0.bias"))
        model.register_load_state_dict_post_hook(lambda mod, keys: keys.unexpected_keys.clear())
        model.load_state_dict(state)  # (strict: what the hooks left is fine)
        return log, (result.missing_keys, result.unexpected_keys)
    assert run(ember) == run(torch)
