"""ember.export dynamic shapes (Dim, dims, Dim.AUTO/STATIC/DYNAMIC, ShapesCollection), the
guards of ep.module(), and the errors of export."""

import re
import warnings

import numpy as np
import pytest
import torch
import torch.export

import ember
from ember.export import (
    ConstraintViolationError,
    Dim,
    ExportError,
    GuardError,
    ShapesCollection,
    dims,
)
from ember.models.gpt import Block
from tests.export.program_helpers import assert_same_as_eager


class Flatten(ember.nn.Module):
    def __init__(self, fixed=None):
        super().__init__()
        self.fc = ember.nn.Linear(12, 2)
        self.fixed = fixed

    def forward(self, x):
        rows = self.fixed if self.fixed is not None else x.shape[0]
        return self.fc(x.reshape(rows, -1))


def test_dynamic_batch_runs_at_other_sizes():
    model = Flatten()
    batch = Dim("batch", min=2, max=16)
    ep = ember.export.export(model, (ember.randn(3, 3, 4),), dynamic_shapes={"x": {0: batch}})
    assert ep.range_constraints == {"batch": ember.export.ValueRange(2, 16)}
    for size in (2, 7, 16):
        assert_same_as_eager(model, ep.module(), ember.randn(size, 3, 4))
    shapes = {str(n.meta["val"]) for n in ep.graph.nodes if "val" in n.meta}
    assert "f32[batch, 12]" in shapes and "f32[batch, 2]" in shapes


def test_gpt_block_with_dynamic_batch_and_sequence():
    ember.manual_seed(0)
    block = Block(16, 2).eval()
    b, t = dims("b", "t", max=32)
    ep = ember.export.export(block, (ember.randn(2, 5, 16),),
                             dynamic_shapes=({0: b, 1: t},))
    for shape in ((3, 9, 16), (5, 3, 16)):  # (sizes no trace had, b and t in new ratios)
        assert_same_as_eager(block, ep.module(), ember.randn(*shape))


def test_guards_name_the_input_and_the_rule():
    ep = ember.export.export(Flatten(), (ember.randn(3, 3, 4),),
                             dynamic_shapes=({0: Dim("batch", max=8)},))
    m = ep.module()
    with pytest.raises(GuardError, match=r"x.size\(\)\[0\] = 9 is outside the range VR\[0, 8\]"):
        m(ember.randn(9, 3, 4))
    with pytest.raises(GuardError, match=r"x.size\(\)\[2\] == 4 \(got 5\)"):
        m(ember.randn(2, 3, 5))
    with pytest.raises(GuardError, match="dtype"):
        m(ember.randn(2, 3, 4, dtype=ember.float64))
    with pytest.raises(AssertionError):  # (torch raises AssertionError for failed guards)
        m(ember.randn(2, 3))


def test_example_outside_the_range_is_a_constraint_violation():
    with pytest.raises(ConstraintViolationError, match=r"size 3 is not in the range of "
                                                        r"Dim\('b', min=4, max=8\)"):
        ember.export.export(Flatten(), (ember.randn(3, 3, 4),),
                            dynamic_shapes=({0: Dim("b", min=4, max=8)},))


def test_specializing_a_dynamic_dim_is_refused_but_auto_makes_it_static():
    model = Flatten(fixed=3)  # (reshape(3, -1): the batch is fixed at 3)
    for dim in (Dim("b"), Dim.DYNAMIC):
        with pytest.raises(ConstraintViolationError, match="as dynamic but the model fixes"):
            ember.export.export(model, (ember.randn(3, 3, 4),), dynamic_shapes=({0: dim},))
    ep = ember.export.export(model, (ember.randn(3, 3, 4),), dynamic_shapes=({0: Dim.AUTO},))
    assert ep.range_constraints == {}
    ep = ember.export.export(Flatten(), (ember.randn(3, 3, 4),),
                             dynamic_shapes=({0: Dim.AUTO, 1: Dim.STATIC},))
    assert list(ep.range_constraints) == ["s0"]
    assert ep.module()(ember.randn(5, 3, 4)).shape == (5, 2)


def test_shape_branch_on_a_dynamic_dim_is_refused():
    class Branch(ember.nn.Module):
        def forward(self, x):
            return x * 2 if x.shape[0] < 4 else (x + 1) * 3

    with pytest.raises(ConstraintViolationError, match="branches on a shape") as caught:
        ember.export.export(Branch(), (ember.randn(3),), dynamic_shapes=({0: Dim("n")},))
    line = Branch.forward.__code__.co_firstlineno + 1  # (the traces differ on that line)
    assert f"(1 against 2 equations, first mul at test_program_dynamic.py:{line} against add " \
        f"at test_program_dynamic.py:{line})" in str(caught.value)


def test_shapes_collection_and_one_dim_shared_by_two_inputs():
    class Add(ember.nn.Module):
        def forward(self, x, y):
            return x + y

    x, y = ember.randn(3, 2), ember.randn(3, 2)
    batch = Dim("batch")
    sc = ShapesCollection()
    sc[x], sc[y] = {0: batch}, {0: batch}
    ep = ember.export.export(Add(), (x, y), dynamic_shapes=sc)
    m = ep.module()
    np.testing.assert_allclose(m(ember.ones(5, 2), ember.ones(5, 2)).numpy(), 2.0)
    with pytest.raises(GuardError, match="the dim batch"):
        m(ember.ones(5, 2), ember.ones(4, 2))


def test_errors_of_export():
    with pytest.raises(ValueError, match="args to be a tuple"):
        ember.export.export(Flatten(), ember.randn(3, 3, 4))
    with pytest.raises(ValueError, match="instance of ember.nn.Module"):
        ember.export.export(lambda x: x, (ember.randn(2),))
    with pytest.raises(ValueError, match="not arguments of the call"):
        ember.export.export(Flatten(), (ember.randn(3, 3, 4),), dynamic_shapes={"y": None})

    class ValueBranch(ember.nn.Module):
        def forward(self, x):
            return x if x.sum() > 0 else -x

    with pytest.raises(ExportError, match="traces the model with ember.jit"):
        ember.export.export(ValueBranch(), (ember.randn(3),))

    class Inplace(ember.nn.Module):
        def forward(self, x):
            x.add_(1)
            return x

    with pytest.raises(ExportError, match="writes into its arguments"):
        ember.export.export(Inplace(), (ember.randn(3),))


def test_arguments_left_to_their_defaults_keep_them_and_are_guarded():
    class Scaled(ember.nn.Module):
        def forward(self, x, *, mask=None, scale=2):
            return x * mask * scale

    n = Dim("n")
    ep = ember.export.export(Scaled(), (ember.ones(4, 3),), {"mask": ember.ones(4, 3)},
                             dynamic_shapes={"x": {0: n}, "mask": {0: n}})
    m = ep.module()
    np.testing.assert_allclose(m(ember.ones(6, 3), mask=ember.ones(6, 3)).numpy(), 2.0)
    with pytest.raises(GuardError, match=r"scale == 2 \(got 3\)"):
        m(ember.ones(6, 3), mask=ember.ones(6, 3), scale=3)


def test_branch_seen_only_by_the_farther_trace_is_a_constraint_violation():
    class Threshold(ember.nn.Module):
        def forward(self, x):  # (3 and 4 take one branch, the farther 5 the other)
            return x * 2 if x.shape[0] > 4 else x + 1

    with pytest.raises(ConstraintViolationError, match=r"Constraints violated \(n\)!.*branches"):
        ember.export.export(Threshold(), (ember.randn(3),), dynamic_shapes=({0: Dim("n")},))


def test_dynamic_shapes_tuple_counts_the_arguments_given_not_the_defaults():
    class Scaled(ember.nn.Module):
        def forward(self, x, scale=2, *, bias=None):
            return x * scale

    for shapes in (({0: Dim("b")},), {"x": {0: Dim("b")}}):
        ep = ember.export.export(Scaled(), (ember.ones(3, 2),), dynamic_shapes=shapes)
        assert list(ep.range_constraints) == ["b"]
        assert ep.module()(ember.ones(5, 2)).shape == (5, 2)
    with pytest.raises(ValueError, match="2 entries for 1 arguments"):
        ember.export.export(Scaled(), (ember.ones(3, 2),), dynamic_shapes=({0: Dim("b")}, None))


def test_two_dims_of_one_name_are_one_dim_when_their_ranges_agree():
    class Add(ember.nn.Module):
        def forward(self, x, y):
            return x + y

    args = (ember.ones(3, 2), ember.ones(3, 2))
    ep = ember.export.export(Add(), args, dynamic_shapes=({0: Dim("b")}, {0: Dim("b")}))
    assert list(ep.range_constraints) == ["b"]
    with pytest.raises(ValueError, match="different definitions"):
        ember.export.export(Add(), args,
                            dynamic_shapes=({0: Dim("b", max=5)}, {0: Dim("b", max=9)}))


@pytest.mark.parametrize("hint", [Dim.AUTO, Dim.DYNAMIC])
def test_unnamed_dims_the_model_makes_equal_become_one_dim(hint):
    class Add(ember.nn.Module):
        def forward(self, x, y):
            return x + y

    ep = ember.export.export(Add(), (ember.ones(3, 2), ember.ones(3, 2)),
                             dynamic_shapes=({0: hint}, {0: hint}))
    assert list(ep.range_constraints) == ["s0"]  # (as torch: one symbol for both)
    m = ep.module()
    assert m(ember.ones(7, 2), ember.ones(7, 2)).shape == (7, 2)
    with pytest.raises(GuardError, match="the dim s0"):
        m(ember.ones(7, 2), ember.ones(6, 2))
    batch = Dim("batch")  # (an unnamed dim equal to a named one takes its name)
    ep = ember.export.export(Add(), (ember.ones(3, 2), ember.ones(3, 2)),
                             dynamic_shapes=({0: hint}, {0: batch}))
    assert list(ep.range_constraints) == ["batch"]


def test_an_example_at_the_top_of_its_range_is_traced_again_inside_it():
    class Positions(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.pos = ember.nn.Parameter(ember.randn(8, 4))

        def forward(self, x):
            if x.shape[1] > 8:  # (as a GPT refuses a sequence over its block size)
                raise ValueError("sequence too long")
            return x + self.pos[:x.shape[1]]

    model = Positions()
    ep = ember.export.export(model, (ember.randn(2, 8, 4),),
                             dynamic_shapes={"x": {1: Dim("t", min=2, max=8)}})
    assert ep.range_constraints == {"t": ember.export.ValueRange(2, 8)}
    x = ember.randn(2, 3, 4)
    np.testing.assert_allclose(ep.module()(x).detach().numpy(), model(x).detach().numpy())


def test_a_branch_beyond_the_range_of_the_dim_is_no_violation():
    class Threshold(ember.nn.Module):
        def forward(self, x):
            return x * 2 if x.shape[0] > 4 else x + 1

    ep = ember.export.export(Threshold(), (ember.ones(3),),
                             dynamic_shapes=({0: Dim("n", max=4)},))
    np.testing.assert_allclose(ep.module()(ember.ones(4)).numpy(), 2.0)


def test_an_arange_over_a_dynamic_size_follows_it():
    ember.manual_seed(0)
    gpt = ember.models.gpt(vocab_size=20, block_size=8, n_layer=1, n_head=2).eval()
    ep = ember.export.export(gpt, (ember.zeros(2, 5, dtype=ember.int64),),
                             dynamic_shapes={"idx": {0: Dim("b"), 1: Dim("t", max=8)}})
    loaded = _saved_and_loaded(ep)
    for shape in ((3, 7), (1, 2)):  # (positions: ember.arange(T))
        idx = ember.randint(0, 20, shape)
        for program in (ep, loaded):
            np.testing.assert_allclose(program.module()(idx).detach().numpy(),
                                       gpt(idx).detach().numpy(), rtol=1e-5, atol=1e-5)


class Selections(ember.nn.Module):
    def forward(self, x):
        return (x.topk(2, dim=1), x.sort(dim=-1, descending=True), x.max(dim=1),
                x.median(dim=1, keepdim=True), x.cummax(1),
                ember.nn.functional.max_pool1d(x.transpose(1, 2), 2, return_indices=True))


def test_row_numbers_of_gathers_follow_a_dynamic_size():
    """topk, sort, max, median, cummax and max pooling read their values at their indices
    with the row numbers arange(B)[:, None, None] as an index: those follow the batch (a
    reshaped arange; it was a ConstraintViolationError)."""
    ep = ember.export.export(Selections(), (ember.randn(4, 5, 6),),
                             dynamic_shapes={"x": {0: Dim("b"), 2: Dim("w")}})
    loaded = _saved_and_loaded(ep)
    for shape in ((7, 5, 8), (1, 5, 4)):
        x = ember.randn(*shape)
        want = ember.utils._pytree.tree_flatten(Selections()(x))[0]
        for program in (ep, loaded, ep.run_decompositions()):
            got = ember.utils._pytree.tree_flatten(program.module()(x))[0]
            assert len(got) == len(want)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g.numpy(), w.numpy())


class CausalScores(ember.nn.Module):
    def forward(self, x):
        t = x.shape[1]
        return x @ x.transpose(1, 2) * ember.ones(t, t).tril()


def test_a_constant_of_one_value_follows_a_dynamic_size_whatever_its_bytes():
    # ones(T, T) was a constant below 64 KiB and a broadcast above, so the traces at T = 5
    # and T = 512 differed and export refused the dim (a TransformerEncoderLayer's dropout
    # mask in training mode alike)
    model = CausalScores()
    ep = ember.export.export(model, (ember.randn(2, 5, 4),),
                             dynamic_shapes={"x": {1: Dim("t", max=512)}})
    for t in (3, 300):
        assert_same_as_eager(model, ep.module(), ember.randn(2, t, 4))
    layer = ember.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    ep = ember.export.export(layer, (ember.randn(2, 5, 8),),
                             dynamic_shapes={"src": {1: Dim("t", max=64)}})
    assert ep.module()(ember.randn(2, 40, 8)).shape == (2, 40, 8)


def _saved_and_loaded(ep):
    import io

    buffer = io.BytesIO()
    ember.export.save(ep, buffer)
    buffer.seek(0)
    return ember.export.load(buffer)


@pytest.mark.parametrize("dim", [Dim("n"), Dim("n", max=40)], ids=["unbounded", "max"])
def test_a_branch_inside_the_range_that_the_grown_traces_miss_is_refused(dim):
    class Far(ember.nn.Module):
        def forward(self, x):  # (3, 4 and 5 take one side: the ends of the range the other)
            return x[:2] * 2.0 if x.shape[0] > 10 else x[:1] * 3.0

    with pytest.raises(ConstraintViolationError, match=r"Constraints violated \(n\)!"):
        ember.export.export(Far(), (ember.randn(3),), dynamic_shapes=({0: dim},))
    ep = ember.export.export(Far(), (ember.randn(3),), dynamic_shapes=({0: Dim("n", max=10)},))
    np.testing.assert_allclose(ep.module()(ember.ones(10)).numpy(), [3.0])


def test_the_traces_at_the_ends_of_the_ranges_stay_small():
    """Each dim reaches its high end in a trace of its own, the others at their low ends (a
    batch and a sequence both at their largest would cost their product), and a dim without
    a max goes to twice the example's size or 32 more."""
    seen = []

    class Attention(ember.nn.Module):
        def forward(self, x):
            seen.append(tuple(x.shape))
            return (x @ x.transpose(-1, -2)).softmax(-1) @ x

    ember.export.export(Attention(), (ember.randn(8, 64, 4),),
                        dynamic_shapes=({0: Dim("b"), 1: Dim("t", max=100)},))
    assert (2, 100, 4) in seen and (40, 2, 4) in seen
    assert not any(b > 10 and t > 72 for b, t, _ in seen)  # (none with both at their high end)


def test_two_dims_the_model_makes_equal_are_named_in_the_error_like_torch():
    class Add(ember.nn.Module):
        def forward(self, x, y):
            return x + y

    class TorchAdd(torch.nn.Module):
        def forward(self, x, y):
            return x + y

    with pytest.raises(Exception, match="(?s)The values of b = .* and a = .* must always "
                                        "be equal.*b = a"):
        torch.export.export(TorchAdd(), (torch.ones(3, 4), torch.ones(3, 4)),
                            dynamic_shapes={"x": {0: torch.export.Dim("a")},
                                            "y": {0: torch.export.Dim("b")}})
    with pytest.raises(ConstraintViolationError, match="The values of b and a must always be "
                                                       "equal.*Hint: use one Dim for them: b = a"):
        ember.export.export(Add(), (ember.ones(3, 4), ember.ones(3, 4)),
                            dynamic_shapes={"x": {0: Dim("a")}, "y": {0: Dim("b")}})


def test_the_traces_of_many_dynamic_dims_give_no_recompile_warning():
    """Four dynamic dims take more than the 8 traces at which ember.jit warns of a function
    compiled again and again (here before a refusal): that warning, and its hint to change
    the caller, is the export's own doing, not the user's."""
    model = ember.nn.Conv3d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2).eval()
    shapes = {d: Dim(f"d{d}", min=1) for d in (0, 2, 3, 4)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ConstraintViolationError):
            ember.export.export(model, (ember.randn(2, 4, 9, 9, 9),), dynamic_shapes=(shapes,))
    assert not [w for w in caught if "has been compiled" in str(w.message)]


@pytest.mark.parametrize("dynamic_shapes, label", [(({3: Dim("n")}, None), "[0]"),
                                                   ({"x": {3: Dim("n")}}, "['x']")])
def test_a_wrong_axis_is_named_by_its_argument(dynamic_shapes, label):
    # the message's path was dynamic_shapes[0][0] (of the (args, kwargs) pair it walks); a
    # tuple's entry is named by its position, as the user wrote it
    class Model(ember.nn.Module):
        def forward(self, x, y=None):
            return x + 1

    with pytest.raises(ember.errors.ArgumentError, match=re.escape(
            f"dynamic_shapes{label} names axis 3 of a tensor of shape (3,)")):
        ember.export.export(Model(), (ember.ones(3), ember.ones(2)),
                            dynamic_shapes=dynamic_shapes)


def test_a_keyword_arguments_tuple_entry_is_named_by_its_position():
    class Model(ember.nn.Module):
        def forward(self, x, y=None):
            return x + y

    with pytest.raises(ember.errors.ArgumentError, match=r"dynamic_shapes\[1\] names axis 3"):
        ember.export.export(Model(), (ember.ones(3),), {"y": ember.ones(3)},
                            dynamic_shapes=(None, {3: Dim("n")}))


def test_a_star_args_forward_takes_a_dict_dynamic_shapes_by_its_name():
    """``forward(self, *xs)``: ``{"xs": (spec, spec)}``, one entry per argument, as
    torch.export accepts (it was refused: xs's spec was paired with the first argument)."""
    class Model(ember.nn.Module):
        def forward(self, *xs):
            return xs[0] + xs[1]

    n = Dim("n")
    ep = ember.export.export(Model(), (ember.ones(3), ember.ones(3)),
                             dynamic_shapes={"xs": ({0: n}, {0: n})})
    shapes = [p.meta["val"].shape for p in ep.graph.nodes if p.op == "placeholder"]
    assert [str(s[0]) for s in shapes] == ["n", "n"]
    assert ep.module()(ember.ones(5), ember.full((5,), 2.0)).tolist() == [3.0] * 5
    with pytest.raises(ember.errors.ArgumentError, match=r"dynamic_shapes\['xs'\] is"):
        ember.export.export(Model(), (ember.ones(3), ember.ones(3)),
                            dynamic_shapes={"xs": ({0: n}, {0: n}, None)})


@pytest.mark.parametrize("save", [False, True])
def test_the_module_of_a_star_args_forward_is_called_as_the_model(save, tmp_path):
    """``ep.module()`` of ``forward(self, a, *xs, **kw)`` takes ``m(a, x1, x2, k=y)``, as
    torch's (it took ``xs`` as one tuple argument and ``kw`` as one dict)."""
    def model(lib):
        class Model(lib.nn.Module):
            def forward(self, a, *xs, **kw):
                return a + xs[0] * xs[1] - kw["k"]
        return Model()

    def args(lib):
        return lib.ones(3), lib.full((3,), 2.0), lib.full((3,), 3.0)

    ep = ember.export.export(model(ember), args(ember), {"k": ember.ones(3)})
    if save:
        ember.export.save(ep, tmp_path / "ep.pt2")
        ep = ember.export.load(tmp_path / "ep.pt2")
    want = torch.export.export(model(torch), args(torch), {"k": torch.ones(3)}).module()(
        *args(torch), k=torch.full((3,), 4.0))
    got = ep.module()(*args(ember), k=ember.full((3,), 4.0))
    assert got.tolist() == want.tolist()
    # (a tuple is not the two arguments: torch a ValueError on the structure, Ember a guard)
    with pytest.raises(ember.export.guards.GuardError, match=r"xs\[0\] is a tensor"):
        ep.module()(ember.ones(3), (ember.ones(3), ember.ones(3)), k=ember.ones(3))
