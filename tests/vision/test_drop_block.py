"""DropBlock (torchvision.ops.drop_block2d/3d): the dropped pixels form whole blocks inside the
map, survivors are rescaled by the kept share, and the error and eval behaviour is
torchvision's (0.29.1)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
from ember.vision import ops


def test_dropped_pixels_are_whole_blocks_and_survivors_rescaled():
    ember.manual_seed(0)
    out = ops.drop_block2d(ember.ones(2, 3, 9, 11), 0.3, 3)
    dropped = torch.from_numpy((out == 0).numpy()).float()
    # a block may start where a 3x3 all-dropped window starts; those blocks cover every drop
    starts = -TF.max_pool2d(-dropped, 3, stride=1)
    covered = TF.max_pool2d(TF.pad(starts, [2, 2, 2, 2]), 3, stride=1)
    assert torch.equal(covered, dropped)
    kept = out.numpy()[out.numpy() != 0]
    np.testing.assert_allclose(kept, out.numel() / (1e-6 + kept.size), rtol=1e-5)


def test_drop_share_is_about_p():
    ember.manual_seed(1)
    shares = [float((ops.drop_block3d(ember.ones(2, 4, 6, 6, 6), 0.4, 3) == 0).float().mean())
              for _ in range(40)]
    assert 0.25 < np.mean(shares) < 0.55  # torchvision 0.29.1 averages 0.37 on these inputs


def test_eval_zero_p_and_errors():
    x = ember.randn(1, 2, 5, 5)
    assert ops.drop_block2d(x, 0.5, 3, training=False) is x
    assert ops.drop_block2d(x, 0.0, 3) is x
    assert ops.DropBlock2d(0.5, 3).eval()(x) is x
    with pytest.raises(ValueError, match="drop_block2d: drop probability has to be between"):
        ops.drop_block2d(x, 1.5, 3)
    with pytest.raises(ValueError, match=r"drop_block3d: input should be 5 dimensional .*"
                                         r"got shape \(1, 2, 5, 5\)"):
        ops.drop_block3d(x, 0.5, 3)
    with pytest.raises(ValueError, match="block size should be odd, got 4"):
        ops.drop_block2d(x, 0.5, 4)
    # a block larger than the map is clipped to it: 5 here, odd, so the whole map drops
    assert (ops.drop_block2d(x.clone(), 1.0, 9) == 0).all()
    y = ember.ones(1, 1, 3, 3)
    assert ops.drop_block2d(y, 1.0, 3, inplace=True) is y and (y == 0).all()
    assert repr(ops.DropBlock3d(0.1, 3)) == "DropBlock3d(p=0.1, block_size=3, inplace=False)"
