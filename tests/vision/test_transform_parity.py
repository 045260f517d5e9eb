"""Values the torchvision-0.29.1 sweep (/work/fuzz/vision_tf) found different, checked here
against constants recorded from torchvision 0.29.1 (printed by running the same call there)
or computed by hand."""


import ember
from ember.vision.transforms import functional as TF


def test_affine_nearest_picks_torchvisions_pixel_on_half_pixel_ties():
    # scale 1.2 on a 9-wide row puts samples on half pixels; the grid is built in float32 as
    # torchvision's, so they round its way (recorded from torchvision 0.29.1's F.affine)
    x = ember.arange(18, dtype=ember.float32).reshape(1, 1, 2, 9)
    out = TF.affine(x, 0.0, [0, 0], 1.2, [0.0, 0.0])
    assert out[0, 0].tolist() == [[1, 2, 2, 3, 4, 5, 6, 6, 7], [10, 11, 11, 12, 13, 14, 15, 15, 16]]
