"""``ember.library.opcheck``: tests that a custom op's registrations agree with its
implementation (``torch.library.opcheck``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember.autograd.grad_mode import no_grad
from ember.autograd.gradcheck import gradcheck
from ember.errors import ArgumentError, EmberError
from ember.func.vmap import vmap
from ember.library.custom_op import CustomOpDef
from ember.library.registry import lookup
from ember.library.schema import TENSOR
from ember.ops.join import stack
from ember.ops.primitive import spec
from ember.random import fork_rng, manual_seed
from ember.tensor import Tensor

DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
                      "test_vmap", "test_jit")


class OpCheckError(EmberError, RuntimeError):
    """A check of :func:`opcheck` failed."""


def opcheck(op: str | CustomOpDef, args: tuple, kwargs: dict | None = None, *,
            test_utils: str | Sequence[str] = DEFAULT_TEST_UTILS,
            raise_exception: bool = True, atol: float | None = None,
            rtol: float | None = None) -> dict[str, Any]:
    """Checks a custom op on sample arguments, as ``torch.library.opcheck``.

    The checks (``test_utils``): ``test_schema`` (it writes only into ``mutates_args``, and
    bumps their version), ``test_autograd_registration`` (inputs that require grad need a
    registered backward; a float64 ``gradcheck`` of it), ``test_faketensor`` (the fake rule
    gives the implementation's output shapes and dtypes), ``test_vmap`` (``vmap`` over two
    samples equals the op applied to each) and ``test_jit`` (the ``ember.jit.compile``d op
    equals eager); PyTorch's ``test_aot_dispatch_dynamic`` and ``test_aot_dispatch_static``
    are ``test_jit`` plus the compiled gradients compared with eager. Each runs on clones of
    ``args``, and the runs it compares start from one seed (an op drawing from Ember's
    generator passes; the stream outside is left as it was).

    Returns:
        ``{check: "SUCCESS"}``, or the :class:`OpCheckError` of a failed check when
        ``raise_exception`` is False.

    Example:
        >>> ember.library.opcheck(ember.ops.mylib.numpy_sin, (ember.randn(3),))
        {'test_schema': 'SUCCESS', 'test_autograd_registration': 'SUCCESS', \
'test_faketensor': 'SUCCESS', 'test_vmap': 'SUCCESS', 'test_jit': 'SUCCESS'}
    """
    target = lookup(op)
    kwargs = kwargs or {}
    utils = (test_utils,) if isinstance(test_utils, str) else tuple(test_utils)
    for name in utils:
        if name not in _CHECKS:
            raise ArgumentError(f"opcheck: unknown test_utils entry {name!r}; expected some of "
                                f"{tuple(_CHECKS)}")
    tol = {"atol": 1e-5 if atol is None else atol, "rtol": 1e-4 if rtol is None else rtol}
    results: dict[str, Any] = {}
    for name in utils:
        try:
            _CHECKS[name](target, args, kwargs, tol)
            results[name] = "SUCCESS"
        except Exception as exc:  # noqa: BLE001 - each check's failure is the result
            error = OpCheckError(f"opcheck(op, ...): {name} failed with "
                                 f"{str(exc) or type(exc).__name__}")
            if raise_exception:
                raise error from exc
            results[name] = error
    return results


def _seeded(fn: Callable) -> Callable:
    """``fn`` run from one fixed seed, the generator's state outside left as it was: an op that
    draws random numbers gives the same values in each run compared (as in PyTorch)."""
    def run(*args: Any) -> Any:
        with fork_rng():
            manual_seed(42)
            return fn(*args)
    return run


def _clone(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x.detach().clone().requires_grad_(x.requires_grad)
    if isinstance(x, list):
        return [_clone(v) for v in x]
    return x


def _cloned(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    return tuple(_clone(a) for a in args), {k: _clone(v) for k, v in kwargs.items()}


def _outputs(op: CustomOpDef, out: Any) -> tuple:
    """The tensors an op's return value holds (a list's items; numbers left out)."""
    items = out if op._schema.tupled else (out,)
    return tuple(t for item in (items or ()) if item is not None
                 for t in (item if isinstance(item, list) else [item]) if isinstance(t, Tensor))


def _close(what: str, got: Any, want: Any, tol: dict) -> None:
    from ember.testing import assert_close

    try:
        assert_close(got, want, **tol)
    except AssertionError as exc:
        raise AssertionError(f"{what} differs from eager: {exc}") from None


def _check_schema(op: CustomOpDef, args: tuple, kwargs: dict, tol: dict) -> None:
    args, kwargs = _cloned(args, kwargs)
    values = op.bind(args, kwargs)
    tensors = {p.name: values[p.name] for p in op._schema.params if p.kind == TENSOR}
    before = {n: (t._vc.value, t.detach().clone()) for n, t in tensors.items()}
    with no_grad():
        op(*args, **kwargs)
    for name, t in tensors.items():
        version, value = before[name]
        if name in op._schema.mutated:
            if t._vc.value == version:
                raise AssertionError(f"{op.qualname}: argument {name!r} is in mutates_args "
                                     "but its version did not change")
        elif t._vc.value != version or not bool((t == value).all()):
            raise AssertionError(f"{op.qualname}: argument {name!r} changed but is not in "
                                 "mutates_args")


def _slots(values: dict[str, Any]) -> dict[tuple, Tensor]:
    """The tensors among the arguments by place: ``(name, None)`` for a tensor argument,
    ``(name, i)`` for the ``i``-th of a tensor list."""
    return {(name, i): t for name, v in values.items()
            for i, t in (enumerate(v) if isinstance(v, (list, tuple)) else [(None, v)])
            if isinstance(t, Tensor)}


def _replaced(values: dict[str, Any], places: list[tuple], tensors: tuple) -> dict[str, Any]:
    """``values`` with ``tensors`` in the ``places`` of :func:`_slots`."""
    given = {name: list(v) if isinstance(v, (list, tuple)) else v for name, v in values.items()}
    for (name, i), t in zip(places, tensors):
        if i is None:
            given[name] = t
        else:
            given[name][i] = t
    return given


def _check_autograd(op: CustomOpDef, args: tuple, kwargs: dict, tol: dict) -> None:
    values = op.bind(args, kwargs)
    tensors = _slots(values)
    needing = [place for place, t in tensors.items() if t.requires_grad]
    if op._backward is None:
        if needing:
            fix = "a mutating op cannot have one, so pass inputs that do not require grad" \
                if op._schema.mutated else "register_autograd"
            raise AssertionError(f"{op.qualname}: inputs {[n for n, _ in needing]} require "
                                 f"grad but no autograd formula is registered ({fix})")
        return
    checked = needing or [w for w, t in tensors.items() if t.dtype.is_floating_point]
    if not checked:  # (no floating-point input: nothing differentiable)
        return
    leaves = tuple(tensors[w].detach().double().requires_grad_() for w in checked)
    gradcheck(_seeded(lambda *ts: _outputs(op, op(**_replaced(values, checked, ts)))), leaves,
              atol=1e-5, rtol=1e-3)


def _check_fake(op: CustomOpDef, args: tuple, kwargs: dict, tol: dict) -> None:
    args, kwargs = _cloned(args, kwargs)
    inputs, layout = op.split(op.bind(args, kwargs))
    specs, lens = op._infer(tuple(spec(t) for t in inputs), layout)
    specs = specs if op.primitive(lens).nout > 1 else (specs,)
    with no_grad():
        outs, got = op.apply_lens(inputs, layout)
    if lens != got:
        raise AssertionError(f"{op.qualname}: the fake impl gives lists of lengths {list(lens)}, "
                             f"the implementation made {list(got)}")
    real = outs[:len(specs) - len(op._schema.mutated)]
    for i, (s, o) in enumerate(zip(specs, real)):
        if tuple(s.shape) != tuple(o.shape) or s.dtype is not o.dtype:
            raise AssertionError(f"{op.qualname}: the fake impl gives output {i} as {s}, the "
                                 f"implementation made {spec(o)}")


def _tensor_call(op: CustomOpDef, args: tuple, kwargs: dict) -> tuple[list, Callable]:
    """The op's tensor arguments (those in lists too), and a function of them returning the
    outputs and the mutated arguments."""
    values = op.bind(args, kwargs)
    tensors = _slots(values)
    places = list(tensors)

    def call(*ts: Tensor) -> tuple:
        given = _replaced(values, places, ts)
        out = _outputs(op, op(**given))
        return out + tuple(given[n] for n in op._schema.mutated)

    return list(tensors.values()), call


def _check_vmap(op: CustomOpDef, args: tuple, kwargs: dict, tol: dict) -> None:
    args, kwargs = _cloned(args, kwargs)
    tensors, call = _tensor_call(op, args, kwargs)
    second = [t * 0.5 + 0.25 if t.dtype.is_floating_point else t for t in tensors]
    with no_grad():
        batch = [stack([a.detach(), b.detach()]) for a, b in zip(tensors, second)]
        got = _seeded(vmap(call))(*batch)
        want = [stack(list(pair)) for pair in zip(*_seeded(lambda: (
            call(*[t.clone() for t in tensors]), call(*[t.clone() for t in second])))())]
    for i, (g, w) in enumerate(zip(got, want)):
        _close(f"{op.qualname}: output {i} under vmap", g, w, tol)


def _check_jit(op: CustomOpDef, args: tuple, kwargs: dict, tol: dict) -> None:
    from ember.jit import compile as jit_compile

    args, kwargs = _cloned(args, kwargs)
    tensors, call = _tensor_call(op, args, kwargs)
    tensors = [t.detach() for t in tensors]
    compiled = _seeded(jit_compile(call))
    with no_grad():
        want = _seeded(call)(*[t.clone() for t in tensors])
        for attempt in ("traced", "compiled"):
            got = compiled(*[t.clone() for t in tensors])
            for i, (g, w) in enumerate(zip(got, want)):
                _close(f"{op.qualname}: output {i} of the {attempt} call", g, w, tol)


def _check_aot_dispatch(op: CustomOpDef, args: tuple, kwargs: dict, tol: dict) -> None:
    """PyTorch's ``test_aot_dispatch_dynamic`` (and ``_static``): the compiled op equals eager
    (``test_jit``), and so do its gradients for the inputs that require grad."""
    from ember.autograd.engine import grad
    from ember.jit import compile as jit_compile
    from ember.ops.creation import ones_like

    _check_jit(op, args, kwargs, tol)
    args, kwargs = _cloned(args, kwargs)
    tensors, call = _tensor_call(op, args, kwargs)
    if op._backward is None or not any(t.requires_grad for t in tensors):
        return

    def gradients(fn: Callable) -> list:
        given = [t.detach().clone().requires_grad_(t.requires_grad) for t in tensors]
        outs = [o for o in fn(*given) if isinstance(o, Tensor) and o.grad_fn is not None]
        return list(grad(outs, [t for t in given if t.requires_grad],
                         [ones_like(o) for o in outs], allow_unused=True))

    want, got = gradients(_seeded(call)), gradients(_seeded(jit_compile(call)))
    for i, (g, w) in enumerate(zip(got, want)):
        if (g is None) != (w is None):
            raise AssertionError(f"{op.qualname}: the gradient of input {i} is None in one of "
                                 "the compiled and eager calls only")
        if g is not None:
            _close(f"{op.qualname}: the gradient of input {i} of the compiled call", g, w, tol)


_CHECKS: dict[str, Callable] = {
    "test_schema": _check_schema,
    "test_autograd_registration": _check_autograd,
    "test_faketensor": _check_fake,
    "test_vmap": _check_vmap,
    "test_jit": _check_jit,
    "test_aot_dispatch_dynamic": _check_aot_dispatch,  # (PyTorch's names)
    "test_aot_dispatch_static": _check_aot_dispatch,
}
