"""An error raised while an Interpreter (or ShapeProp) runs a node names that node, as
torch.fx's Interpreter and ShapeProp do ("While executing %matmul ..."); Ember's error gave
the op's shapes but not which node of the graph failed."""

import pytest

import ember
from ember.fx.passes.shape_prop import ShapeProp


def _graph():
    return ember.fx.symbolic_trace(lambda x, y: (x @ y).sin())


@pytest.mark.parametrize("run", [lambda gm, *a: ember.fx.Interpreter(gm).run(*a),
                                 lambda gm, *a: ShapeProp(gm).propagate(*a)])
def test_the_error_names_the_node(run):
    gm = _graph()
    with pytest.raises(ember.errors.ShapeError, match="inner sizes 2 and 3") as info:
        run(gm, ember.ones(4, 2), ember.ones(3, 2))
    assert info.value.__notes__ == [
        "While executing %matmul : [num_users=1] = "
        "call_function[target=operator.matmul](args = (%x, %y), kwargs = {})"]
