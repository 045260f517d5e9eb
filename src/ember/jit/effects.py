"""The tracer's effect equations: what a compiled step does outside its arrays' values
(an optimizer's step, ``zero_grad(set_to_none=False)``, a scheduler's or a gradient scaler's
call), run for real while tracing and again, by the generated code, at every call."""

from __future__ import annotations

from typing import Any

from ember.jit.ir import Effect, Eqn
from ember.jit.kernels import owner as memory_owner
from ember.jit.outside_memory import by_owner, overlap
from ember.jit.sources import TraceError, _at, user_source
from ember.ops.primitive import PRIMITIVES
from ember.tensor import Tensor, _wrap


class Effects:
    """The effect-recording half of :class:`~ember.jit.tracer.Tracer` (the optimizer and
    scheduler hooks call these methods; they use the tracer's variables and graph)."""

    def record_effect(self, name: str, run: Any, ins: list[Tensor], outs: Any,
                      call: Any, items: int = 0, split: Any = None) -> Any:
        """Runs ``call()`` (the real, untraced effect) and records an effect equation: at run
        time ``run(*arrays of ins)`` returns the arrays of ``outs()``, which then hold new
        variables (views of the old values go stale); ``items`` and ``split`` as
        :class:`~ember.jit.ir.Effect`'s."""
        in_vars = [self.var_of(t) for t in ins]
        self.copy_apart(ins)
        result = call()
        for v, t in zip(in_vars, ins):
            self.invalidate_views(v, t._data)
        out_vars = [self.new_var(t._data, "eqn") for t in outs()]
        self.__dict__.setdefault("run_memory", {}).update(  # (see copy_apart)
            (id(t._data), (t._data, v)) for t, v in zip(outs(), out_vars))
        self.dynamic.update(out_vars)
        self.graph.eqns.append(Eqn(Effect(name, run, items, split), in_vars, {}, out_vars,
                                   user_source()))
        return result

    def own_value(self, x: Tensor, var: Any) -> Any:
        """The variable ``x`` holds after an in-place write of ``var``'s value: a copy, as
        eager's ``copy_`` makes, where ``var`` is (or views) an effect's output (memory an
        optimizer step wrote: ``b.copy_(w[:, 0])`` after it), or where ``x`` is memory the
        function made and ``var`` the caller's (an argument, state: ``snap.copy_(w[1])``),
        which a later write into that memory would change under ``x``."""
        root = self.view_root.get(var, var)
        if root not in {v for _, v in self.__dict__.get("run_memory", {}).values()} and (
                self.fresh.get(id(x._data)) is not x._data or root.kind not in ("state", "input")):
            return var
        copy = self.new_var(x._data, "eqn")
        self.dynamic.add(copy)
        self.graph.eqns.append(Eqn(PRIMITIVES["copy"], [var], {"order": "K"}, [copy],
                                   user_source()))
        return copy

    def copy_apart(self, written: list[Tensor]) -> None:
        """Before an effect writes the memory of ``written`` in place: another array holding
        one's value, or a view of it, as its own (``y.copy_(w)``, ``g.copy_(w.grad)``,
        ``s.copy_(state["step"])``; the graph gives it the same variable) gets a copy of it,
        made here, so that it keeps the value the effect overwrites."""
        memory = {}
        run_memory = self.__dict__.get("run_memory", {})
        start = {id(ref.tensor._grad if ref.grad else ref.tensor): ref.var
                 for ref in self.graph.state} if written else {}
        for t in written:
            # (what t holds now, and what its memory holds when the effect runs: its value
            # when the call started, or the last effect's, where an op wrote t since)
            last = run_memory.get(id(t._data), (None,))
            for var in [self.lookup(t._data), start.get(id(t)),
                        last[-1] if last[0] is t._data else None]:
                if var is not None and t._data.size:  # (an empty array holds no value)
                    memory[self.view_root.get(var, var)] = t._data
        copies: dict = {}
        for ref, var in list(self.env.values()) if memory else ():
            array, written_memory = ref(), memory.get(self.view_root.get(var, var))
            if written_memory is not None and array is not None and array.size and \
                    array is not written_memory and not overlap(array, written_memory):
                if var not in copies:
                    copies[var] = self.new_var(array, "eqn")
                    self.dynamic.add(copies[var])
                    self.graph.eqns.append(Eqn(PRIMITIVES["copy"], [var], {"order": "K"},
                                               [copies[var]], user_source()))
                self.rebind(array, copies[var])

    def optimizer_step(self, opt: Any, call: Any, closure: Any = None) -> Any:  # noqa: D417
        """``opt.step()``: one effect over parameters and gradients, which the early-update
        pass may split where the optimizer updates each parameter on its own."""
        if closure is not None:
            raise TraceError(f"ember.jit: {type(opt).__name__}.step(closure) inside a compiled "
                             f"function{_at(user_source())}: the closure would run once, at "
                             "trace time. Hint: compute the loss in the compiled function and "
                             "call step() without a closure; an optimizer that needs the "
                             "closure (LBFGS) steps outside, with the closure compiled: "
                             "opt.step(ember.jit.compile(closure))")
        return self._step_effect(f"{type(opt).__name__}.step", opt, opt.step, call,
                                 opt.can_split_step())

    def _step_effect(self, name: str, opt: Any, run: Any, call: Any,
                     split: bool = False) -> Any:
        """An effect over ``opt``'s parameters and their gradients: at run time the gradients
        are bound to ``.grad`` and ``run()`` updates the parameters (and may rewrite the
        gradients in place). With ``split``, any of its parameters may step alone
        (``opt.step_part``), writing its array and its optimizer state's. Reached tensors on
        the parameters' memory (the flat vector they are views of) are its inputs and
        outputs too, so that reads of them come before or after it (never split then)."""
        params, others = _with_grads(opt), _without_grads(opt)
        flat = _on_memory_of(self.found.tensors, params)
        self.binds_grads = True
        self.stepped.append(opt)
        self._write_state_before(opt)
        self.copy_apart([t for _, t in self.found.optimizer_state(opt)])

        def part(ks: list[int], first: bool) -> Any:
            some = [params[k] for k in ks]
            return _stepper(some, opt.step_part(some, params if first else ()), part=True)

        def writes(k: int) -> list:
            p = params[k]
            return [p._data, *(t._data for t in opt.state.get(p, {}).values()
                               if isinstance(t, Tensor))]

        result = self.record_effect(name, _stepper(params, _aside(others, run), flat),
                                    params + [p.grad for p in params] + flat,
                                    lambda: params + [p.grad for p in params] + flat, call,
                                    len(params), (part, writes) if split and not flat else None)
        if flat:  # (see outside_memory.shared_state: what the step alone writes)
            eqn, n = self.graph.eqns[-1], len(params)
            at = [*range(n), *range(2 * n, 2 * n + len(flat))]
            self.moved_together.append({id(t): (eqn.inputs[i], eqn.outputs[i])
                                        for t, i in zip(params + flat, at)})
        self.read_state_anew(opt)
        return result

    def flat_read(self, t: Tensor, what: str) -> bool:
        """Whether ``t`` is a tensor on stepped parameters' memory, not one of them, whose
        value Python reads (``flat.tolist()``): no graph holds it, so the call runs eagerly
        (as any such step did before it compiled)."""
        if not any(id(t) in vars_ for vars_ in self.moved_together) or \
                any(p is t for p in self.found.params):
            return False
        self.eager_reason = self.eager_reason or (
            f"runs eagerly: Python reads the value of {self.labels.get(id(t), 'a tensor')} "
            f"({what}), which an optimizer step writes through the parameters viewing it. "
            "Hint: use ember ops on it, or read it outside")
        return True

    def _write_state_before(self, opt: Any) -> None:
        """The optimizer's state tensors written in place since the call started
        (``opt.state[p]["momentum_buffer"].mul_(0.5)``) get those values in their memory
        before its step reads them: an effect (a state tensor's new value is otherwise
        written only at the graph's end)."""
        start = {id(ref.tensor): ref.var for ref in self.graph.state if not ref.grad}
        written = [t for _, t in self.found.optimizer_state(opt)
                   if id(t) in start and self.lookup(t._data) not in (None, start[id(t)])]
        if written:
            self.record_effect(f"{type(opt).__name__}.state write", _writer(written), written,
                               lambda: written, lambda: None)

    def scaler_unscale(self, scaler: Any, call: Any, opt: Any) -> Any:
        """``GradScaler.unscale_(opt)``: an effect dividing the gradients by the scale of the
        moment and noting an inf/NaN among them."""
        params, run = _with_grads(opt), _aside(_without_grads(opt), lambda: scaler.unscale_(opt))

        def unscale(*arrays: Any) -> list:
            _bind_grads(params, arrays)
            run()
            return [p.grad._data for p in params]

        return self.record_effect("GradScaler.unscale_", unscale, [p.grad for p in params],
                                  lambda: [p.grad for p in params], call)

    def scaler_step(self, scaler: Any, call: Any, opt: Any) -> Any:
        """``GradScaler.step(opt)``: the optimizer's step as an effect, skipped at run time
        when that step's gradients hold an inf/NaN."""
        return self._step_effect("GradScaler.step", opt, lambda: scaler.step(opt), call)

    def optimizer_zero_grad(self, opt: Any, call: Any) -> Any:
        """``zero_grad(set_to_none=False)`` writes zeros into the gradients: an effect."""
        grads = [p.grad for p in _with_grads(opt)]

        def zero(*arrays: Any) -> list:
            for a in arrays:
                a[...] = 0
            return list(arrays)

        return self.record_effect("zero_grad", zero, grads, lambda: grads, call)

    def scheduler_step(self, scheduler: Any, call: Any, *args: Any) -> Any:
        """``scheduler.step()``: an effect (the learning rate it sets is read at run time;
        the function's own reads of it after the step are noted: see lr_reads)."""
        result = self.python_effect(f"{type(scheduler).__name__}.step", call, args)
        self.lr_reads.scheduler_stepped(scheduler)
        return result

    def scaler_update(self, scaler: Any, call: Any, *args: Any) -> Any:
        """``GradScaler.update()``: an effect (the scale it sets is read at run time; the
        function's own ``get_scale()`` after it is noted: see lr_reads)."""
        result = self.python_effect("GradScaler.update", call, args)
        self.lr_reads.scaler_updated(scaler)
        return result

    def python_effect(self, what: str, call: Any, args: tuple = ()) -> Any:
        """An effect on Python objects only (a scheduler's step, a generator's reseeding):
        ``call()`` now, untraced, and again on every run; an argument in ``args`` would be
        the trace's value forever, so it is refused."""
        if any(a is not None for a in args):
            raise TraceError(f"ember.jit: {what}(...) with an argument inside a compiled "
                             f"function{_at(user_source())}: the value would be frozen. Hint: "
                             "call it outside the compiled function")

        def run() -> list:
            call()
            return []

        return self.record_effect(what, run, [], list, call)

    def generator_state(self, read: Any) -> Tensor:
        """``Generator.get_state()``: ``read()``, the state as a tensor, now and again at
        every run (a graph keeping the trace's state would restore a stale stream)."""
        box: list[Tensor] = []
        return self.record_effect("Generator.get_state", lambda: [read()._data], [],
                                  lambda: box, lambda: box.append(read()) or box[0])

    def set_generator_state(self, state: Tensor, restore: Any) -> None:
        """``Generator.set_state(state)``: ``restore(array)`` with the value ``state`` has
        at each run."""
        self.record_effect("Generator.set_state", lambda a: restore(a) or [], [state], list,
                           lambda: restore(state._data))


def _with_grads(opt: Any) -> list[Tensor]:
    """An optimizer's parameters that hold a gradient."""
    return [p for group in opt.param_groups for p in group["params"] if p.grad is not None]


def _without_grads(opt: Any) -> list[Tensor]:
    """An optimizer's parameters that hold no gradient (while tracing: at its step)."""
    return [p for group in opt.param_groups for p in group["params"] if p.grad is None]


def _aside(others: list[Tensor], run: Any) -> Any:
    """``run()`` with the ``.grad`` of ``others`` set aside: the parameters that had none
    when the trace stepped (cleared inside, by ``zero_grad()``) may hold one at run time, the
    last step's, where the graph clears it only at its end; eager's step skips them, so this
    one must not read a stale gradient."""
    if not others:
        return run

    def aside() -> Any:
        stale = [p for p in others if p._grad is not None]  # (none where they stay frozen)
        if not stale:
            return run()
        kept = [p._grad for p in stale]
        for p in stale:
            p._grad = None
        try:
            return run()
        finally:
            for p, g in zip(stale, kept):
                p._grad = g

    return aside


def _on_memory_of(tensors: list[Tensor], params: list[Tensor]) -> list[Tensor]:
    """The tensors of ``tensors`` other than ``params`` that share memory with one of them
    (a flat vector the parameters are views of)."""
    ids, owners = {id(p) for p in params}, by_owner(params)
    return [t for t in tensors if id(t) not in ids and
            any(overlap(t._data, p._data) for p in owners.get(memory_owner(t._data), ()))]


def _stepper(params: list[Tensor], run: Any, flat: list[Tensor] | tuple = (),
             part: bool = False) -> Any:
    """The run of an optimizer's step effect over ``params`` (their arrays, then their
    gradients' arrays, then those of ``flat``, tensors on their memory, which it returns
    again): the gradients are bound to ``.grad`` and ``run()`` updates the parameters. A
    ``part`` of a step unbinds them again, so that a gradient's memory is freed when the
    graph no longer reads it (the graph's end binds the final ``.grad``)."""

    write = _writer(params)  # (an in-place op before the step, a max_norm renorm, made the
    # value a new array: the step updates the parameter's own)

    def step(*arrays: Any) -> list:
        write(*arrays[:len(params)])
        before = [p._grad for p in params]
        _bind_grads(params, arrays[len(params):])
        run()
        out = [p._data for p in params] + [p.grad._data for p in params] + \
            [t._data for t in flat]
        if part:
            for p, grad in zip(params, before):
                p._grad = grad
        return out

    return step


def _writer(tensors: list[Tensor]) -> Any:
    """The run of an effect that writes the graph's values of ``tensors`` into their memory
    (where they are other arrays) and returns that memory."""

    def write(*arrays: Any) -> list:
        pending = [(t, a) for t, a in zip(tensors, arrays) if t._data is not a]
        if len(pending) > 1:  # (a value on another's memory, b.copy_(w[:, 0]) before w was
            # written: its old value, copied before any is written)
            pending = [(t, a.copy() if any(u is not t and overlap(a, u._data)
                                           for u, _ in pending) else a) for t, a in pending]
        for t, a in pending:
            t._data[...] = a
            t._vc.value += 1
        return [t._data for t in tensors]

    return write


def _bind_grads(params: list[Tensor], arrays: Any) -> None:
    """At run time: the graph's gradient arrays as the parameters' ``.grad``."""
    for p, g in zip(params, arrays):
        p.grad = _wrap(g, p._device)
