"""AutoAugment (policy tables, magnitude bins, draws) and AugMix (mixing and its Dirichlet
weights), against torchvision's definitions computed with torch."""

import numpy as np
import pytest
import torch

import ember
from ember.vision import transforms as T
from ember.vision.transforms.augmix import _augmix_space
from ember.vision.transforms.autoaugment import _apply, _space
from ember.vision.transforms.policies import _POLICIES

RNG = np.random.default_rng(0)
U8 = RNG.integers(0, 256, (3, 12, 14), dtype=np.uint8)
OPS = {"ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color",
       "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize", "Invert"}


def test_policy_tables_have_torchvisions_shape_and_entries():
    for policy in T.AutoAugmentPolicy:
        table = _POLICIES[policy]
        assert len(table) == 25 and all(len(sub) == 2 for sub in table)
        for name, p, magnitude in (step for sub in table for step in sub):
            assert name in OPS and 0.0 <= p <= 1.0
            assert (magnitude is None) == (name in ("AutoContrast", "Equalize", "Invert"))
            assert magnitude is None or 0 <= magnitude <= 9
    imagenet = _POLICIES[T.AutoAugmentPolicy.IMAGENET]
    assert imagenet[0] == (("Posterize", 0.4, 8), ("Rotate", 0.6, 9))
    assert imagenet[13] == (("Invert", 0.6, None), ("Equalize", 1.0, None))
    assert _POLICIES[T.AutoAugmentPolicy.CIFAR10][14] == (("Solarize", 0.5, 2),
                                                         ("Invert", 0.0, None))
    assert _POLICIES[T.AutoAugmentPolicy.SVHN][-1] == (("ShearX", 0.7, 2), ("Invert", 0.1, None))


def test_magnitude_bins_match_torchvision():
    w, h = 14, 12
    space = _space(10, 0.3, (150.0 / 331.0 * w, 150.0 / 331.0 * h), 30.0, 0.9, 4)
    tv = {"ShearX": torch.linspace(0.0, 0.3, 10),
          "TranslateX": torch.linspace(0.0, 150.0 / 331.0 * w, 10),
          "TranslateY": torch.linspace(0.0, 150.0 / 331.0 * h, 10),
          "Rotate": torch.linspace(0.0, 30.0, 10), "Color": torch.linspace(0.0, 0.9, 10),
          "Posterize": 8 - (torch.arange(10) / ((10 - 1) / 4)).round().int(),
          "Solarize": torch.linspace(255.0, 0.0, 10)}
    for name, want in tv.items():
        np.testing.assert_allclose(space[name][0], want.numpy(), rtol=1e-6)
    mix = _augmix_space(w, h, all_ops=True)
    assert list(mix) == ["ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Posterize",
                         "Solarize", "AutoContrast", "Equalize", "Brightness", "Color",
                         "Contrast", "Sharpness"]
    np.testing.assert_allclose(mix["TranslateX"][0], torch.linspace(0.0, w / 3.0, 10).numpy())
    np.testing.assert_allclose(mix["TranslateY"][0], torch.linspace(0.0, h / 3.0, 10).numpy())
    np.testing.assert_array_equal(
        mix["Posterize"][0], (4 - (torch.arange(10) / ((10 - 1) / 4)).round().int()).numpy())
    assert len(_augmix_space(w, h, all_ops=False)) == 9


def test_auto_augment_applies_the_drawn_sub_policy():
    img = ember.tensor(U8)
    for policy in T.AutoAugmentPolicy:
        t = T.AutoAugment(policy, fill=7)
        for seed in range(8):
            ember.manual_seed(seed)
            out = t(img)
            ember.manual_seed(seed)
            policy_id, probs, signs = t.get_params(25)
            want = img
            space = _space(10, 0.3, (150.0 / 331.0 * 14, 150.0 / 331.0 * 12), 30.0, 0.9, 4)
            for i, (name, p, bin_) in enumerate(_POLICIES[policy][policy_id]):
                if probs[i].item() <= p:
                    magnitude = 0.0 if bin_ is None else float(space[name][0][bin_])
                    if bin_ is not None and space[name][1] and signs[i].item() == 0:
                        magnitude = -magnitude
                    want = _apply(want, name, magnitude, T.InterpolationMode.NEAREST, [7.0] * 3)
            np.testing.assert_array_equal(out.numpy(), want.numpy())
    np.testing.assert_array_equal(_apply(img, "Invert", 0.0, "nearest", None).numpy(), 255 - U8)
    ember.manual_seed(0)
    draws = [T.AutoAugment.get_params(25) for _ in range(2500)]
    ids = np.bincount([d[0] for d in draws], minlength=25)
    assert ids.min() > 60 and ids.max() < 140                    # uniform over 25: 100 each
    probs = np.array([d[1].tolist() for d in draws])
    assert abs(probs.mean() - 0.5) < 0.02 and 0 <= probs.min() and probs.max() < 1
    assert abs(np.mean([d[2].tolist() for d in draws]) - 0.5) < 0.03
    assert repr(T.AutoAugment(fill=7)) == "AutoAugment(policy=AutoAugmentPolicy.IMAGENET, fill=7)"
    with pytest.raises(ValueError, match="policy imagenet is not recognized"):
        T.AutoAugment("imagenet")
    with pytest.raises(TypeError, match="uint8"):
        T.AutoAugment()(ember.rand(3, 4, 4))
    assert T.AutoAugment()(U8.transpose(1, 2, 0)).shape == (12, 14, 3)


def test_augmix_mixes_the_image_with_an_augmented_chain():
    class HalfAndHalf(T.AugMix):
        def _sample_dirichlet(self, params):              # as torchvision's own test does
            return params.softmax(dim=-1)

    img = ember.tensor(U8)
    t = HalfAndHalf(severity=1, mixture_width=1, chain_depth=1, all_ops=False)
    candidates = []                                       # every operation at its first bin
    for name, (bins, _) in _augmix_space(14, 12, all_ops=False).items():
        aug = _apply(img, name, float(bins[0]) if bins.ndim else 0.0, "bilinear", None)
        candidates.append((0.5 * U8 + 0.5 * aug.numpy().astype(np.float32)).astype(np.uint8))
    seen = set()
    for seed in range(12):
        ember.manual_seed(seed)
        out = t(img).numpy()
        hit = [k for k, c in enumerate(candidates) if np.array_equal(out, c)]
        assert hit
        seen.update(hit)
    assert len(seen) >= 3
    batch = ember.tensor(np.stack([U8, U8[:, ::-1]]))
    out = T.AugMix()(batch)
    assert out.shape == batch.shape and out.dtype is ember.uint8
    assert T.AugMix(severity=10, chain_depth=2)(U8.transpose(1, 2, 0)).shape == (12, 14, 3)
    with pytest.raises(ValueError, match=r"severity must be between \[1, 10\], got 11"):
        T.AugMix(severity=11)
    with pytest.raises(TypeError, match="uint8"):
        T.AugMix()(ember.rand(3, 4, 4))


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_augmix_dirichlet_weights_are_beta_distributed(alpha):
    ember.manual_seed(0)
    m = T.AugMix(alpha=alpha)._sample_dirichlet(ember.tensor([alpha, alpha]).expand(20000, -1))
    first = m[:, 0].numpy()
    np.testing.assert_allclose(m.sum(-1).numpy(), 1.0, rtol=1e-6)
    var = alpha * alpha / ((2 * alpha) ** 2 * (2 * alpha + 1))        # Beta(alpha, alpha)
    assert abs(first.mean() - 0.5) < 0.01 and abs(first.var() - var) < 0.01
    three = T.AugMix(alpha=alpha)._sample_dirichlet(ember.tensor([alpha] * 3).expand(20000, -1))
    np.testing.assert_allclose(three.numpy().mean(0), 1 / 3, atol=0.01)
