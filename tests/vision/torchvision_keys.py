"""The state-dict layouts of torchvision's classifiers at full size (names and shapes, in
order), written out from torchvision's module structure; the plain-torch twins in
``torch_models.py`` are mostly built small."""

import math

from tests.vision.torch_models import divisible


def conv(p, o, i, k, bias=False):
    return [(f"{p}.weight", (o, i, k, k))] + ([(f"{p}.bias", (o,))] if bias else [])


def bn(p, c):
    return [(f"{p}.weight", (c,)), (f"{p}.bias", (c,)), (f"{p}.running_mean", (c,)),
            (f"{p}.running_var", (c,)), (f"{p}.num_batches_tracked", ())]


def linear(p, o, i):
    return [(f"{p}.weight", (o, i)), (f"{p}.bias", (o,))]


def ln(p, c):
    return [(f"{p}.weight", (c,)), (f"{p}.bias", (c,))]


def conv_bn(p, o, i, k, groups=1):  # a Conv2dNormActivation with batch norm
    return conv(f"{p}.0", o, i // groups, k) + bn(f"{p}.1", o)


def squeezenet(version, num_classes=1000):
    fires = {"1_0": [(3, 96, 16, 64), (4, 128, 16, 64), (5, 128, 32, 128), (7, 256, 32, 128),
                     (8, 256, 48, 192), (9, 384, 48, 192), (10, 384, 64, 256),
                     (12, 512, 64, 256)],
             "1_1": [(3, 64, 16, 64), (4, 128, 16, 64), (6, 128, 32, 128), (7, 256, 32, 128),
                     (9, 256, 48, 192), (10, 384, 48, 192), (11, 384, 64, 256),
                     (12, 512, 64, 256)]}[version]
    keys = conv("features.0", 96, 3, 7, True) if version == "1_0" else conv("features.0", 64, 3,
                                                                            3, True)
    for index, inp, sq, ex in fires:
        p = f"features.{index}"
        keys += conv(f"{p}.squeeze", sq, inp, 1, True) + conv(f"{p}.expand1x1", ex, sq, 1, True)
        keys += conv(f"{p}.expand3x3", ex, sq, 3, True)
    return keys + conv("classifier.1", num_classes, 512, 1, True)


def mobilenet_v3(arch):
    # input, kernel, expanded, output, SE
    large = [(16, 3, 16, 16, 0), (16, 3, 64, 24, 0), (24, 3, 72, 24, 0), (24, 5, 72, 40, 1),
             (40, 5, 120, 40, 1), (40, 5, 120, 40, 1), (40, 3, 240, 80, 0), (80, 3, 200, 80, 0),
             (80, 3, 184, 80, 0), (80, 3, 184, 80, 0), (80, 3, 480, 112, 1),
             (112, 3, 672, 112, 1), (112, 5, 672, 160, 1), (160, 5, 960, 160, 1),
             (160, 5, 960, 160, 1)]
    small = [(16, 3, 16, 16, 1), (16, 3, 72, 24, 0), (24, 3, 88, 24, 0), (24, 5, 96, 40, 1),
             (40, 5, 240, 40, 1), (40, 5, 240, 40, 1), (40, 5, 120, 48, 1), (48, 5, 144, 48, 1),
             (48, 5, 288, 96, 1), (96, 5, 576, 96, 1), (96, 5, 576, 96, 1)]
    rows, last = (large, 1280) if arch == "large" else (small, 1024)
    keys = conv_bn("features.0", 16, 3, 3)
    for n, (i, k, e, o, se) in enumerate(rows, 1):
        p, j = f"features.{n}.block", 0
        if e != i:
            keys += conv_bn(f"{p}.0", e, i, 1)
            j = 1
        keys += conv_bn(f"{p}.{j}", e, e, k, groups=e)
        if se:
            s = divisible(e // 4)
            keys += conv(f"{p}.{j + 1}.fc1", s, e, 1, True) + conv(f"{p}.{j + 1}.fc2", e, s, 1,
                                                                   True)
        keys += conv_bn(f"{p}.{j + 1 + se}", o, e, 1)
    o = rows[-1][3]
    keys += conv_bn(f"features.{len(rows) + 1}", 6 * o, o, 1)
    return keys + linear("classifier.0", last, 6 * o) + linear("classifier.3", 1000, last)


def densenet(growth, blocks, init):
    keys = conv("features.conv0", init, 3, 7) + bn("features.norm0", init)
    c = init
    for b, layers in enumerate(blocks, 1):
        for m in range(1, layers + 1):
            p = f"features.denseblock{b}.denselayer{m}"
            keys += bn(f"{p}.norm1", c) + conv(f"{p}.conv1", 4 * growth, c, 1)
            keys += bn(f"{p}.norm2", 4 * growth) + conv(f"{p}.conv2", growth, 4 * growth, 3)
            c += growth
        if b < len(blocks):
            keys += bn(f"features.transition{b}.norm", c)
            keys += conv(f"features.transition{b}.conv", c // 2, c, 1)
            c //= 2
    return keys + bn("features.norm5", c) + linear("classifier", 1000, c)


def shufflenet_v2(widths):
    keys = conv("conv1.0", 24, 3, 3) + bn("conv1.1", 24)
    c = 24
    for s, (repeats, o) in enumerate(zip([4, 8, 4], widths), 2):
        h = o // 2
        for u in range(repeats):
            p = f"stage{s}.{u}"
            if u == 0:
                keys += conv(f"{p}.branch1.0", c, 1, 3) + bn(f"{p}.branch1.1", c)
                keys += conv(f"{p}.branch1.2", h, c, 1) + bn(f"{p}.branch1.3", h)
            keys += conv(f"{p}.branch2.0", h, c if u == 0 else h, 1) + bn(f"{p}.branch2.1", h)
            keys += conv(f"{p}.branch2.3", h, 1, 3) + bn(f"{p}.branch2.4", h)
            keys += conv(f"{p}.branch2.5", h, h, 1) + bn(f"{p}.branch2.6", h)
        c = o
    last = 2048 if widths[0] == 244 else 1024
    return keys + conv("conv5.0", last, c, 1) + bn("conv5.1", last) + linear("fc", 1000, last)


def efficientnet(width, depth):
    stages = [(1, 3, 32, 16, 1), (6, 3, 16, 24, 2), (6, 5, 24, 40, 2), (6, 3, 40, 80, 3),
              (6, 5, 80, 112, 3), (6, 5, 112, 192, 4), (6, 3, 192, 320, 1)]
    first = divisible(32 * width)
    keys = conv_bn("features.0", first, 3, 3)
    for s, (t, k, i, o, n) in enumerate(stages, 1):
        i, o = divisible(i * width), divisible(o * width)
        for b in range(math.ceil(n * depth)):
            inp = i if b == 0 else o
            e, p, j = divisible(inp * t), f"features.{s}.{b}.block", 0
            if e != inp:
                keys += conv_bn(f"{p}.0", e, inp, 1)
                j = 1
            sq = max(1, inp // 4)
            keys += conv_bn(f"{p}.{j}", e, e, k, groups=e)
            keys += conv(f"{p}.{j + 1}.fc1", sq, e, 1, True) + conv(f"{p}.{j + 1}.fc2", e, sq, 1,
                                                                    True)
            keys += conv_bn(f"{p}.{j + 2}", o, e, 1)
    o = divisible(320 * width)
    return keys + conv_bn("features.8", 4 * o, o, 1) + linear("classifier.1", 1000, 4 * o)


def convnext(widths, depths):
    keys = conv("features.0.0", widths[0], 3, 4, True) + ln("features.0.1", widths[0])
    f = 1
    for s, (w, d) in enumerate(zip(widths, depths)):
        for b in range(d):
            p = f"features.{f}.{b}"
            keys += [(f"{p}.layer_scale", (w, 1, 1))] + conv(f"{p}.block.0", w, 1, 7, True)
            keys += ln(f"{p}.block.2", w) + linear(f"{p}.block.3", 4 * w, w)
            keys += linear(f"{p}.block.5", w, 4 * w)
        if s < 3:
            keys += ln(f"features.{f + 1}.0", w) + conv(f"features.{f + 1}.1", widths[s + 1], w,
                                                        2, True)
        f += 2
    return keys + ln("classifier.0", widths[-1]) + linear("classifier.2", 1000, widths[-1])


def vgg(cfg, batch_norm):
    keys, c, index = [], 3, 0
    for v in cfg:
        if v == "M":
            index += 1
            continue
        keys += conv(f"features.{index}", v, c, 3, True)
        keys += bn(f"features.{index + 1}", v) if batch_norm else []
        index += 3 if batch_norm else 2
        c = v
    return (keys + linear("classifier.0", 4096, 25088) + linear("classifier.3", 4096, 4096)
            + linear("classifier.6", 1000, 4096))


def vit(patch, layers, hidden, mlp):
    keys = [("class_token", (1, 1, hidden))] + conv("conv_proj", hidden, 3, patch, True)
    keys += [("encoder.pos_embedding", (1, (224 // patch) ** 2 + 1, hidden))]
    for i in range(layers):
        p = f"encoder.layers.encoder_layer_{i}"
        keys += ln(f"{p}.ln_1", hidden)
        keys += [(f"{p}.self_attention.in_proj_weight", (3 * hidden, hidden)),
                 (f"{p}.self_attention.in_proj_bias", (3 * hidden,))]
        keys += linear(f"{p}.self_attention.out_proj", hidden, hidden) + ln(f"{p}.ln_2", hidden)
        keys += linear(f"{p}.mlp.0", mlp, hidden) + linear(f"{p}.mlp.3", hidden, mlp)
    return keys + ln("encoder.ln", hidden) + linear("heads.head", 1000, hidden)


def efficientnet_v2(stages, first):
    """``stages``: (fused, expansion, kernel, input, output, layers) rows."""
    keys = conv_bn("features.0", first, 3, 3)
    for s, (fused, t, k, i, o, n) in enumerate(stages, 1):
        for b in range(n):
            inp, p = (i if b == 0 else o), f"features.{s}.{b}.block"
            e = divisible(inp * t)
            if fused:
                keys += conv_bn(f"{p}.0", e, inp, k) + (conv_bn(f"{p}.1", o, e, 1) if e != inp
                                                        else [])
                continue
            sq = max(1, inp // 4)
            keys += conv_bn(f"{p}.0", e, inp, 1) + conv_bn(f"{p}.1", e, e, k, groups=e)
            keys += conv(f"{p}.2.fc1", sq, e, 1, True) + conv(f"{p}.2.fc2", e, sq, 1, True)
            keys += conv_bn(f"{p}.3", o, e, 1)
    last = f"features.{len(stages) + 1}"
    return keys + conv_bn(last, 1280, stages[-1][4], 1) + linear("classifier.1", 1000, 1280)


def mnasnet(alpha):
    d = [divisible(w * alpha) for w in (32, 16, 24, 40, 80, 96, 192, 320)]
    keys = conv("layers.0", d[0], 3, 3) + bn("layers.1", d[0]) + conv("layers.3", d[0], 1, 3)
    keys += bn("layers.4", d[0]) + conv("layers.6", d[1], d[0], 1) + bn("layers.7", d[1])
    stacks = [(3, 3, 3), (5, 3, 3), (5, 6, 3), (3, 6, 2), (5, 6, 4), (3, 6, 1)]
    for s, (k, t, n) in enumerate(stacks):
        for b in range(n):
            i, o = (d[s + 1] if b == 0 else d[s + 2]), d[s + 2]
            p = f"layers.{8 + s}.{b}.layers"
            keys += conv(f"{p}.0", i * t, i, 1) + bn(f"{p}.1", i * t)
            keys += conv(f"{p}.3", i * t, 1, k) + bn(f"{p}.4", i * t)
            keys += conv(f"{p}.6", o, i * t, 1) + bn(f"{p}.7", o)
    keys += conv("layers.14", 1280, d[7], 1) + bn("layers.15", 1280)
    return keys + linear("classifier.1", 1000, 1280)
