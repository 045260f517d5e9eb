"""Plain values (an optimizer's hyperparameters and step counts: None, bool, int, float, str,
lists, tuples and dicts of them) in a distributed checkpoint: kept as JSON in the manifest,
no pickle, put back in place of the template's on load, as PyTorch's
``torch.distributed.checkpoint`` saves non-tensor values; other objects are refused clearly."""

from tests.distributed.harness import needs_mpi, run_ranks

pytestmark = needs_mpi

ROUND_TRIP = r"""
import math, os, sys, pytest, numpy as np, ember, ember.distributed as dist
from ember.distributed import checkpoint
dist.init_process_group()
root = sys.argv[1]


def trained(lr, steps):
    ember.manual_seed(0)
    model = ember.nn.Linear(3, 2)
    opt = ember.optim.Adam(model.parameters(), lr=lr, betas=(0.8, 0.9), amsgrad=True)
    for _ in range(steps):
        opt.zero_grad()
        model(ember.ones(4, 3)).square().sum().backward()
        opt.step()
    return model, opt


model, opt = trained(0.1, 3)
state = {"model": model.state_dict(), "opt": opt.state_dict(),
         "misc": {"none": None, "flag": True, "n": 3, "x": 2.5, "nan": math.nan,
                  "inf": -math.inf, "name": "run", "mixed": [1, 2.0, None, "a"],
                  "pair": (0.9, 0.999), "nested": {"a": [1, {"b": "c"}]}, "ints": {0: 7},
                  "ints_in_list": [{0: 7, 1: [2]}], "with_tensor": [ember.ones(2), 0.5],
                  "tuple_tensor": (ember.ones(1), 4)}}
path = checkpoint.save(root, state, step=1)
again, again_opt = trained(0.01, 1)  # other hyperparameters, step counts and values
template = {"model": again.state_dict(), "opt": again_opt.state_dict(),
            "misc": {"none": 1, "flag": False, "n": 0, "x": 0.0, "nan": 0.0, "inf": 0.0,
                     "name": "", "mixed": [], "pair": (0.0, 0.0), "nested": {"a": None},
                     "ints": {0: 0}, "ints_in_list": [{0: 0, 1: []}],
                     "with_tensor": [ember.zeros(2), 0.0],
                     "tuple_tensor": (ember.zeros(1), 0)}}
checkpoint.load(path, template)
misc = template["misc"]
assert misc["none"] is None and misc["flag"] is True and misc["n"] == 3 and misc["x"] == 2.5
assert math.isnan(misc["nan"]) and misc["inf"] == -math.inf and misc["name"] == "run"
assert misc["mixed"] == [1, 2.0, None, "a"] and type(misc["mixed"][1]) is float
assert misc["pair"] == (0.9, 0.999) and misc["nested"] == {"a": [1, {"b": "c"}]}
assert misc["ints"] == {0: 7} and misc["ints_in_list"] == [{0: 7, 1: [2]}]
assert misc["with_tensor"][0].tolist() == [1.0, 1.0] and misc["with_tensor"][1] == 0.5
assert misc["tuple_tensor"][0].tolist() == [1.0] and misc["tuple_tensor"][1] == 4
groups = template["opt"]["param_groups"]
assert groups == opt.state_dict()["param_groups"], groups  # lr, betas (a tuple), amsgrad, …
again_opt.load_state_dict(template["opt"])
again.load_state_dict(template["model"])
for o, m in ((opt, model), (again_opt, again)):  # both go on the same way
    o.zero_grad()
    m(ember.ones(4, 3)).square().sum().backward()
    o.step()
assert all(ember.equal(a, b) for a, b in zip(model.parameters(), again.parameters()))
assert again_opt.state_dict()["state"][0]["step"].item() == 4

for bad, what in ((object(), "object"), (np.float32(1), "float32"), ({1, 2}, "set"),
                  ([1, object()], "list"), ((2, b"x"), "tuple")):
    with pytest.raises(ember.errors.CheckpointError, match=f"'bad[.a-z0-9]*' is a {what}.*"
                       "cannot store"):
        checkpoint.save(root, {"w": ember.ones(1), "bad": bad}, step=2)
with pytest.raises(ember.errors.CheckpointError, match="no plain value 'misc.extra'"):
    checkpoint.load(path, {"misc": {"extra": 1.0}})
# names that flatten alike are refused before anything is written (one value was lost)
for clash, paths in (({"a.b": 1, "a": {"b": 2}}, r"\['a.b'\] and state\['a'\]\['b'\]"),
                     ({"d": {0: 1, "0": 2}}, r"\['d'\]\[0\] and state\['d'\]\['0'\]"),
                     ({"a": {"b": ember.ones(1)}, "a.b": ember.ones(1)}, "'a.b'")):
    with pytest.raises(ember.errors.CheckpointError, match=paths + ".*both flatten"):
        checkpoint.save(root, {"w": ember.ones(1), **clash}, step=3)
    assert not any("00000003" in p for p in os.listdir(root))
with pytest.raises(ember.errors.CheckpointError, match="'model.weight' is saved as a tensor, "
                   r"the template holds a plain float there. Hint: put a tensor of shape \(2, 3\)"):
    checkpoint.load(path, {"model": {"weight": 0.0}})
with pytest.raises(ember.errors.CheckpointError, match="'misc.x' is saved as a plain value, "
                   "the template holds a tensor"):
    checkpoint.load(path, {"misc": {"x": ember.zeros(1)}})
"""


def test_plain_values_round_trip_and_other_objects_are_refused(tmp_path):
    run_ranks(ROUND_TRIP, 1, timeout=120, args=(tmp_path,))
