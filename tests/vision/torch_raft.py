"""torchvision's RAFT rebuilt in plain torch.nn from torchvision's source (torchvision itself is
not installed) with its module names, the reference for ``ember.vision.models.optical_flow``:
the correlation pyramid and its lookup, the update step (motion encoder, GRUs, flow head, mask
predictor, convex upsampling) and the whole model. Coordinates are made in the features' dtype
(torchvision's are float32, so its RAFT cannot run in float64)."""

import torch
import torch.nn.functional as F
from torch import nn


def conv_act(i, o, k, stride=1, norm=None, relu=True):
    """torchvision's Conv2dNormActivation with a biased conv: conv, [norm], [ReLU]."""
    layers = [nn.Conv2d(i, o, k, stride, (k - 1) // 2, bias=True)]
    layers += [norm(o)] if norm is not None else []
    layers += [nn.ReLU()] if relu else []
    return nn.Sequential(*layers)


class Residual(nn.Module):
    def __init__(self, i, o, norm, stride):
        super().__init__()
        self.convnormrelu1 = conv_act(i, o, 3, stride, norm)
        self.convnormrelu2 = conv_act(o, o, 3, 1, norm)
        self.downsample = nn.Identity() if stride == 1 else conv_act(i, o, 1, stride, norm, False)

    def forward(self, x):
        return torch.relu(self.downsample(x) + self.convnormrelu2(self.convnormrelu1(x)))


class Bottleneck(nn.Module):
    def __init__(self, i, o, norm, stride):
        super().__init__()
        self.convnormrelu1 = conv_act(i, o // 4, 1, 1, norm)
        self.convnormrelu2 = conv_act(o // 4, o // 4, 3, stride, norm)
        self.convnormrelu3 = conv_act(o // 4, o, 1, 1, norm)
        self.downsample = nn.Identity() if stride == 1 else conv_act(i, o, 1, stride, norm, False)

    def forward(self, x):
        y = self.convnormrelu3(self.convnormrelu2(self.convnormrelu1(x)))
        return torch.relu(self.downsample(x) + y)


class Encoder(nn.Module):
    def __init__(self, block, layers, norm):
        super().__init__()
        self.convnormrelu = conv_act(3, layers[0], 7, 2, norm)
        for n, stride in zip((1, 2, 3), (1, 2, 2)):
            stage = [block(layers[n - 1], layers[n], norm, stride),
                     block(layers[n], layers[n], norm, 1)]
            self.add_module(f"layer{n}", nn.Sequential(*stage))
        self.conv = nn.Conv2d(layers[3], layers[4], 1)

    def forward(self, x):
        return self.conv(self.layer3(self.layer2(self.layer1(self.convnormrelu(x)))))


def coords_grid(n, h, w, dtype=torch.float64):
    ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    return torch.stack([xs, ys]).to(dtype).expand(n, 2, h, w)


def pyramid(fmap1, fmap2, levels):
    n, c, h, w = fmap1.shape
    corr = torch.einsum("nci,ncj->nij", fmap1.flatten(2), fmap2.flatten(2))
    out = [corr.reshape(n * h * w, 1, h, w) / c ** 0.5]
    for _ in range(levels - 1):
        out.append(F.avg_pool2d(out[-1], 2, 2))
    return out


def lookup(levels, coords, radius):
    """Each level sampled on the (2r+1)² window around coords/2^level; the window's x offset
    runs along its first axis (as torchvision's)."""
    n, _, h, w = coords.shape
    d = torch.arange(-radius, radius + 1, dtype=coords.dtype)
    window = torch.stack(torch.meshgrid(d, d, indexing="ij"), -1)[None]
    centres = coords.permute(0, 2, 3, 1).reshape(-1, 1, 1, 2)
    out = []
    for k, corr in enumerate(levels):
        pts = centres / 2 ** k + window
        size = torch.tensor([corr.shape[-1] - 1, corr.shape[-2] - 1], dtype=coords.dtype)
        grid = 2 * pts / size - 1
        out.append(F.grid_sample(corr, grid, align_corners=True).reshape(n, h, w, -1))
    return torch.cat(out, -1).permute(0, 3, 1, 2)


def convex_upsample(flow, mask):
    n, c, h, w = flow.shape
    if mask is None:
        return 8 * F.interpolate(flow, scale_factor=8, mode="bilinear", align_corners=True)
    weights = mask.reshape(n, 1, 9, 8, 8, h, w).softmax(2)
    patches = F.unfold(8 * flow, 3, padding=1).reshape(n, c, 9, 1, 1, h, w)
    fine = (weights * patches).sum(2)
    return fine.permute(0, 1, 4, 2, 5, 3).reshape(n, c, 8 * h, 8 * w)


class Motion(nn.Module):
    def __init__(self, corr_in, corr_layers, flow_layers, out):
        super().__init__()
        self.convcorr1 = conv_act(corr_in, corr_layers[0], 1)
        self.convcorr2 = (conv_act(corr_layers[0], corr_layers[1], 3) if len(corr_layers) == 2
                          else nn.Identity())
        self.convflow1 = conv_act(2, flow_layers[0], 7)
        self.convflow2 = conv_act(flow_layers[0], flow_layers[1], 3)
        self.conv = conv_act(corr_layers[-1] + flow_layers[-1], out - 2, 3)

    def forward(self, flow, corr):
        a = self.convcorr2(self.convcorr1(corr))
        b = self.convflow2(self.convflow1(flow))
        return torch.cat([self.conv(torch.cat([a, b], 1)), flow], 1)


class GRU(nn.Module):
    def __init__(self, x, h, k, p):
        super().__init__()
        self.convz, self.convr, self.convq = (nn.Conv2d(h + x, h, k, padding=p) for _ in range(3))

    def forward(self, h, x):
        z = torch.sigmoid(self.convz(torch.cat([h, x], 1)))
        r = torch.sigmoid(self.convr(torch.cat([h, x], 1)))
        q = torch.tanh(self.convq(torch.cat([r * h, x], 1)))
        return h + z * (q - h)


class Recurrent(nn.Module):
    def __init__(self, x, h, kernels, paddings):
        super().__init__()
        for n, (k, p) in enumerate(zip(kernels, paddings), 1):
            self.add_module(f"convgru{n}", GRU(x, h, k, p))

    def forward(self, h, x):
        for gru in self.children():
            h = gru(h, x)
        return h


class Head(nn.Module):
    def __init__(self, i, hidden):
        super().__init__()
        self.conv1 = nn.Conv2d(i, hidden, 3, padding=1)
        self.conv2 = nn.Conv2d(hidden, 2, 3, padding=1)

    def forward(self, x):
        return self.conv2(torch.relu(self.conv1(x)))


class Update(nn.Module):
    def __init__(self, motion, recurrent, head):
        super().__init__()
        self.motion_encoder, self.recurrent_block, self.flow_head = motion, recurrent, head

    def forward(self, h, context, corr, flow):
        h = self.recurrent_block(h, torch.cat([context, self.motion_encoder(flow, corr)], 1))
        return h, self.flow_head(h)


class Mask(nn.Module):
    def __init__(self, i, hidden):
        super().__init__()
        self.convrelu = conv_act(i, hidden, 3)
        self.conv = nn.Conv2d(hidden, 576, 1)

    def forward(self, h):
        return 0.25 * self.conv(self.convrelu(h))


ARCHS = {  # encoder block, feature/context widths and norms, levels, radius, motion, hidden,
    # GRU kernels and paddings, head width, mask
    "raft_large": (Residual, (64, 64, 96, 128, 256), nn.InstanceNorm2d, (64, 64, 96, 128, 256),
                   nn.BatchNorm2d, 4, 4, ((256, 192), (128, 64), 128), 128,
                   ((1, 5), (5, 1)), ((0, 2), (2, 0)), 256, True),
    "raft_small": (Bottleneck, (32, 32, 64, 96, 128), nn.InstanceNorm2d, (32, 32, 64, 96, 160),
                   None, 4, 3, ((96,), (64, 32), 82), 96, (3,), (1,), 128, False),
}


class RAFT(nn.Module):
    def __init__(self, arch, levels=None):
        super().__init__()
        (block, feat, feat_norm, ctx, ctx_norm, self.levels, self.radius, motion, self.hidden,
         kernels, paddings, head, mask) = ARCHS[arch]
        self.levels = levels or self.levels
        self.feature_encoder = Encoder(block, feat, feat_norm)
        self.context_encoder = Encoder(block, ctx, ctx_norm)
        motion = Motion(self.levels * (2 * self.radius + 1) ** 2, *motion)
        self.update_block = Update(motion, Recurrent(motion.conv[0].out_channels + 2 + ctx[-1]
                                                     - self.hidden, self.hidden, kernels, paddings),
                                   Head(self.hidden, head))
        self.mask_predictor = Mask(self.hidden, 256) if mask else None

    def forward(self, image1, image2, num_flow_updates=12):
        fmap1, fmap2 = self.feature_encoder(torch.cat([image1, image2])).chunk(2)
        levels = pyramid(fmap1, fmap2, self.levels)
        h, context = self.context_encoder(image1).split(
            [self.hidden, self.context_encoder.conv.out_channels - self.hidden], 1)
        h, context = torch.tanh(h), torch.relu(context)
        coords0 = coords_grid(*fmap1.shape[:1], *fmap1.shape[2:], fmap1.dtype)
        coords1, flows = coords0, []
        for _ in range(num_flow_updates):
            coords1 = coords1.detach()
            h, delta = self.update_block(h, context, lookup(levels, coords1, self.radius),
                                         coords1 - coords0)
            coords1 = coords1 + delta
            mask = None if self.mask_predictor is None else self.mask_predictor(h)
            flows.append(convex_upsample(coords1 - coords0, mask))
        return flows
