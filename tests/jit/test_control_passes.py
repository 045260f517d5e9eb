"""Graph passes on hand-built graphs holding a cond equation: DCE and CSE inside branches,
folding of a constant predicate, impure branches kept."""

import doctest
import importlib

import numpy as np

import ember
from ember.jit.control.branch import run_graph
from ember.jit.control.cond import cond_primitive
from ember.jit.ir import Eqn, Graph, Var
from ember.jit.passes import fold_constants
from ember.jit.passes.cse import eliminate_common_subexpressions
from ember.jit.passes.dce import eliminate_dead_code
from ember.ops.primitive import PRIMITIVES

F32 = ember.float32
X = np.array([0.5, -1.0, 2.0], np.float32)


def _eqn(name, inputs, out):
    return Eqn(PRIMITIVES[name], inputs, {}, [out])


def _graph(pure=True):
    """``y = cond(p, x)``: true: sin(x) * sin(x) (and a dead exp), false: -x."""
    a, t1, t2, t3, dead = (Var(i, (3,), F32, "input" if i == 0 else "eqn") for i in range(5))
    true = Graph("true_fn", inputs=[a], outputs=[t3],
                 eqns=[_eqn("sin", [a], t1), _eqn("sin", [a], t2), _eqn("mul", [t1, t2], t3),
                       _eqn("exp", [a], dead)])
    b, f1 = Var(0, (3,), F32, "input"), Var(1, (3,), F32, "eqn")
    false = Graph("false_fn", inputs=[b], outputs=[f1], eqns=[_eqn("neg", [b], f1)])
    x, p, y = Var(0, (3,), F32, "input"), Var(1, (), ember.bool, "input"), Var(2, (3,), F32, "eqn")
    outer = Graph("f", inputs=[x, p], outputs=[y],
                  eqns=[Eqn(cond_primitive(1, pure), [p, x], {"branches": (true, false)}, [y])])
    return outer, true


def test_dce_and_cse_sweep_inside_branches():
    outer, true = _graph()
    eliminate_dead_code(eliminate_common_subexpressions(outer))
    assert [e.prim.name for e in true.eqns] == ["sin", "mul"]
    assert true.eqns[1].inputs[0] is true.eqns[1].inputs[1]
    for p, want in ((True, np.sin(X) ** 2), (False, -X)):
        got, = run_graph(outer, np, (X, np.array(p)))
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_dce_drops_an_unread_cond_unless_a_branch_is_impure():
    for pure, kept in ((True, 0), (False, 1)):
        outer, _ = _graph(pure)
        outer.outputs = []
        assert len(eliminate_dead_code(outer).eqns) == kept


def test_fold_inlines_the_branch_a_constant_predicate_takes():
    for p, names, want in ((True, ["sin", "sin", "mul", "exp"], np.sin(X) ** 2),
                           (False, ["neg"], -X)):
        outer, _ = _graph()
        pred = outer.inputs.pop()
        pred.kind = "const"
        outer.consts[pred] = np.array(p)
        fold_constants(outer)
        assert [e.prim.name for e in outer.eqns] == names
        ids = [v.id for e in outer.eqns for v in e.outputs]
        assert len(set(ids)) == len(ids) and outer.eqns[-1 if p is False else 2].outputs[0] \
            is outer.outputs[0]
        got, = run_graph(outer, np, (X,))
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_fold_keeps_a_cond_with_a_traced_predicate():
    outer, _ = _graph()
    assert [e.prim.name for e in fold_constants(outer).eqns] == ["cond"]


def test_docstring_examples_run():
    for name in ("ember.jit.control.cond", "ember.jit.control.while_loop", "ember.jit.ir"):
        result = doctest.testmod(importlib.import_module(name), extraglobs={"ember": ember})
        assert result.failed == 0, name
