"""torch.utils.data's module paths exist under ember.utils.data with the same public names."""

import importlib
import subprocess
import sys

import pytest
import torch.utils.data  # noqa: F401


@pytest.mark.parametrize("module", ["sampler", "dataset", "dataloader", "distributed"])
def test_every_public_name_of_the_torch_module_is_there(module):
    theirs = importlib.import_module(f"torch.utils.data.{module}")
    ours = importlib.import_module(f"ember.utils.data.{module}")
    missing = [n for n in theirs.__all__ if not hasattr(ours, n)]
    assert not missing, f"ember.utils.data.{module} lacks {missing}"


def test_the_submodules_are_attributes_after_importing_ember():
    import ember

    assert ember.utils.data.distributed.DistributedSampler is ember.data.DistributedSampler
    assert ember.utils.data.sampler.RandomSampler is ember.data.RandomSampler


def test_utils_data_private_utils_is_an_attribute_after_importing_ember():
    # torch.utils.data._utils.collate.default_collate_fn_map works after `import torch` alone;
    # a fresh process, as another test's import would make the attribute
    code = ("import ember; m = ember.utils.data._utils.collate.default_collate_fn_map; "
            "print(ember.Tensor in m)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr[-500:]


def test_collate_fn_map_extends_default_collate_as_torch():
    # torch's default_collate documents two ways to collate a custom type: collate() with a
    # collate_fn_map, or adding the type to default_collate_fn_map in place
    from torch.utils.data._utils import collate as theirs

    import ember
    from ember.utils.data import default_collate
    from ember.utils.data._utils.collate import collate, default_collate_fn_map

    class Point:
        def __init__(self, x):
            self.x = x

    def collate_points(batch, *, collate_fn_map=None):
        return ember.tensor([p.x for p in batch])

    def names(fn_map):
        return [getattr(k, "__name__", None) or [t.__name__ for t in k] for k in fn_map]

    assert names(default_collate_fn_map) == names(theirs.default_collate_fn_map)
    batch = [{"p": Point(1), "t": ember.ones(2)}, {"p": Point(2), "t": ember.zeros(2)}]
    out = collate(batch, collate_fn_map={**default_collate_fn_map, Point: collate_points})
    assert out["p"].tolist() == [1, 2] and out["t"].shape == (2, 2)
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([Point(1)])
    default_collate_fn_map[Point] = collate_points
    try:
        assert default_collate([(Point(3), 1.0), (Point(4), 2.0)])[0].tolist() == [3, 4]
    finally:
        del default_collate_fn_map[Point]
    assert collate([ember.ones(1)] * 2, collate_fn_map={ember.Tensor: lambda b, **k: "mine"}) \
        == "mine"


def test_collate_with_a_copy_of_the_default_map_collates_what_default_collate_does():
    # collate() with a copy of default_collate_fn_map (the documented way to extend it) took
    # complex numbers only when the map *was* default_collate_fn_map (an identity test)
    import ember
    from ember.utils.data import default_collate
    from ember.utils.data._utils.collate import collate, default_collate_fn_map

    def leaves(v):
        return list(v.values()) if isinstance(v, dict) else v if isinstance(v, list) else [v]

    copy = dict(default_collate_fn_map)
    for batch in ([1j, 2 + 0.5j], [(1, 1j), (2, 2j)], [{"z": 3j}, {"z": -1j}]):
        want, got = default_collate(batch), collate(batch, collate_fn_map=copy)
        for w, g in zip(leaves(want), leaves(got), strict=True):
            assert g.dtype == w.dtype and g.tolist() == w.tolist()
    assert collate([1j, 2j], collate_fn_map={**copy, str: lambda b, **k: b}).dtype \
        == ember.complex64
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        collate([1j, 2j], collate_fn_map={int: lambda b, **k: b})   # a map of one's own
