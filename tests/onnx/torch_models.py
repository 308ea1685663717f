"""The PyTorch models tessera must import once exported to ONNX, written as
their authors' reference implementations build them, with their sizes as
parameters: the test fixtures (tests/onnx/make_torch_fixtures.py) export
small ones, the benchmark (bench/peers/models.py) the real sizes.

Each `build_*` returns (module in eval mode, example inputs as a dict of
name -> tensor); every module is deterministic given torch's seed.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


# ----------------------------------------------------------------------------
# ResNet: torchvision's own for ResNet-18, and a narrow copy of its layer
# structure for the fixtures (torchvision's BasicBlock is 64 wide at least).


class BasicBlock(nn.Module):
    """ResNet's basic block, 2-D or (with Conv3d and BatchNorm3d) 3-D."""

    def __init__(self, cin, cout, stride, conv=nn.Conv2d, norm=nn.BatchNorm2d):
        super().__init__()
        self.conv1 = conv(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = norm(cout)
        self.conv2 = conv(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = norm(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(conv(cin, cout, 1, stride, bias=False), norm(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class NarrowResNet18(nn.Module):
    def __init__(self, width, classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], width
        for mult, stride in [(1, 1), (2, 2), (4, 2), (8, 2)]:
            layers += [BasicBlock(cin, width * mult, stride), BasicBlock(width * mult, width * mult, 1)]
            cin = width * mult
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        y = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


def randomize_batchnorm(model):
    """Freshly built BatchNorms are the identity; random statistics make the
    normalization matter."""
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.8, 1.3)
            m.weight.data.uniform_(0.8, 1.2)
            m.bias.data.uniform_(-0.1, 0.1)
    return model


def build_resnet18(batch=1, size=224, width=None):
    """torchvision's ResNet-18, or (with `width`) the narrow copy."""
    if width is None:
        import torchvision
        model = torchvision.models.resnet18(weights=None)
    else:
        model = NarrowResNet18(width, 10)
    return randomize_batchnorm(model).eval(), {"input": torch.randn(batch, 3, size, size)}


# ----------------------------------------------------------------------------
# InfoGAN's generator for MNIST (Chen et al. 2016, table 1): 62 noise
# variables, a 10-way categorical and 2 continuous codes; FC-1024-BN-ReLU,
# FC-(7x7x128)-BN-ReLU, then two 4x4 stride-2 up-convolutions.


class InfoGANGenerator(nn.Module):
    def __init__(self, latent=74, hidden=1024, channels=128, side=7):
        super().__init__()
        self.channels, self.side = channels, side
        self.fc = nn.Sequential(
            nn.Linear(latent, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
            nn.Linear(hidden, channels * side * side), nn.BatchNorm1d(channels * side * side), nn.ReLU())
        self.up = nn.Sequential(
            nn.ConvTranspose2d(channels, channels // 2, 4, 2, 1), nn.BatchNorm2d(channels // 2), nn.ReLU(),
            nn.ConvTranspose2d(channels // 2, 1, 4, 2, 1), nn.Tanh())

    def forward(self, z):
        y = self.fc(z).view(z.shape[0], self.channels, self.side, self.side)
        return self.up(y)


def build_infogan(batch=1, hidden=1024, channels=128):
    model = randomize_batchnorm(InfoGANGenerator(hidden=hidden, channels=channels)).eval()
    return model, {"z": torch.randn(batch, 74)}


# ----------------------------------------------------------------------------
# CSRNet's back end (Li et al. 2018, configuration B): six 3x3 convolutions
# with dilation 2 on the VGG-16 front end's 1/8-resolution features, then a
# 1x1 convolution to the density map.


class CSRNetBackend(nn.Module):
    def __init__(self, channels=(512, 512, 512, 256, 128, 64), cin=512):
        super().__init__()
        layers = []
        for c in channels:
            layers += [nn.Conv2d(cin, c, 3, padding=2, dilation=2), nn.ReLU()]
            cin = c
        layers.append(nn.Conv2d(cin, 1, 1))
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


def build_csrnet_backend(batch=1, side=28, scale=1):
    channels = tuple(c // scale for c in (512, 512, 512, 256, 128, 64))
    model = CSRNetBackend(channels, 512 // scale).eval()
    return model, {"features": torch.randn(batch, 512 // scale, side, side)}


# ----------------------------------------------------------------------------
# A BERT encoder layer as Hugging Face's BertLayer computes it in eager mode
# (self-attention with the additive mask, GELU with erf, post-LayerNorm),
# with the embeddings in front for the fixture so that input ids go through
# Gather.


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, intermediate):
        super().__init__()
        self.heads, self.head = heads, hidden // heads
        self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
        self.attn_out = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.inter = nn.Linear(hidden, intermediate)
        self.out = nn.Linear(intermediate, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head).permute(0, 2, 1, 3)

    def forward(self, x, attention_mask):
        # The mask is 1 for tokens to attend to; masked positions get the
        # most negative float added, as BertModel's extended mask does.
        mask = attention_mask[:, None, None, :].to(x.dtype)
        mask = (1.0 - mask) * torch.finfo(x.dtype).min
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head) + mask
        ctx = torch.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(x.shape[0], x.shape[1], -1)
        h = self.ln1(self.attn_out(ctx) + x)
        return self.ln2(self.out(F.gelu(self.inter(h))) + h)


class BertWithEmbeddings(nn.Module):
    def __init__(self, vocab, positions, hidden, heads, intermediate):
        super().__init__()
        self.words = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(positions, hidden)
        self.types = nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layer = BertLayer(hidden, heads, intermediate)

    def forward(self, input_ids, attention_mask):
        pos = torch.arange(input_ids.shape[1]).unsqueeze(0)
        types = torch.zeros_like(input_ids)
        x = self.ln(self.words(input_ids) + self.positions(pos) + self.types(types))
        # Padding positions (mask 0) are also zeroed with a comparison and
        # Where, as some exports do.
        x = torch.where(attention_mask.unsqueeze(-1) == 0, torch.zeros_like(x), x)
        return self.layer(x, attention_mask)


def bert_mask(batch, seq):
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[:, seq - seq // 4:] = 0
    return mask


def build_bert_layer(batch=1, seq=128, hidden=768, heads=12, intermediate=3072):
    model = BertLayer(hidden, heads, intermediate).eval()
    return model, {"hidden_states": torch.randn(batch, seq, hidden), "attention_mask": bert_mask(batch, seq)}


def build_bert_embedded(batch=1, seq=16, hidden=32, heads=2, intermediate=64, vocab=50):
    model = BertWithEmbeddings(vocab, seq, hidden, heads, intermediate).eval()
    ids = torch.randint(0, vocab, (batch, seq))
    return model, {"input_ids": ids, "attention_mask": bert_mask(batch, seq)}


# ----------------------------------------------------------------------------
# PyTorch's own encoder, nn.TransformerEncoder, as a user builds a BERT-like
# one: its attention is nn.MultiheadAttention, whose packed in-projection
# exports as a rank-5 Transpose and Gathers of q, k and v. With a padding
# mask, it adds the mask through Where, and the TorchScript exporter's
# shape arithmetic (Mod, Equal, Where, Expand on shapes) folds at import.


class Encoder(nn.Module):
    def __init__(self, d_model, heads, feedforward, layers, activation, norm_first):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, heads, feedforward, batch_first=True,
                                           activation=activation, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, layers)

    def forward(self, src, padding_mask=None):
        return self.encoder(src, src_key_padding_mask=padding_mask)


def build_transformer_encoder(batch=1, seq=128, d_model=768, heads=12, feedforward=3072, layers=12,
                              activation="relu", norm_first=False, padding_mask=False):
    """nn.TransformerEncoder(nn.TransformerEncoderLayer(...), layers), by
    default BERT-base's sizes; with `padding_mask`, the last quarter of
    each sequence is padding (True in `src_key_padding_mask`)."""
    model = Encoder(d_model, heads, feedforward, layers, activation, norm_first).eval()
    # nn.TransformerEncoder deep-copies one layer, so every layer starts
    # with the same weights (and the TorchScript exporter stores them
    # once); give each its own, as training would.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.8, 1.2)
                m.bias.uniform_(-0.1, 0.1)
            elif isinstance(m, nn.MultiheadAttention):
                m._reset_parameters()
            elif isinstance(m, nn.Linear):
                m.reset_parameters()
    inputs = {"src": torch.randn(batch, seq, d_model)}
    if padding_mask:
        inputs["padding_mask"] = bert_mask(batch, seq) == 0
    return model, inputs


# ----------------------------------------------------------------------------
# Longformer's sliding-window self-attention (Beltagy et al. 2020): each
# token attends to the `window` tokens on either side. As in Hugging Face's
# LongformerSelfAttention, the sequence is cut into chunks and the banded
# scores are computed chunk by chunk with einsum; here each chunk of w
# queries meets its own and its two neighbouring chunks of keys.


class LongformerAttention(nn.Module):
    def __init__(self, hidden, heads, window):
        super().__init__()
        self.heads, self.head, self.w = heads, hidden // heads, window
        self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
        self.out = nn.Linear(hidden, hidden)

    def chunks(self, x):
        """[b, s, hidden] -> queries [b, h, c, w, d] and the keys around
        each chunk [b, h, c, 3w, d]."""
        b, s, _ = x.shape
        c, w = s // self.w, self.w
        x = x.view(b, s, self.heads, self.head).permute(0, 2, 1, 3)
        padded = F.pad(x, (0, 0, w, w))
        around = torch.cat([padded[:, :, k * w:k * w + s].reshape(b, self.heads, c, w, self.head)
                            for k in range(3)], dim=3)
        return x.reshape(b, self.heads, c, w, self.head), around

    def forward(self, x):
        b, s, hidden = x.shape
        c, w = s // self.w, self.w
        q, _ = self.chunks(self.query(x) / math.sqrt(self.head))
        _, k = self.chunks(self.key(x))
        _, v = self.chunks(self.value(x))
        scores = torch.einsum("bhcxd,bhcyd->bhcxy", q, k)
        # Key y of chunk i sits at position (i - 1) w + y; query x at i w + x.
        # Keep |key - query| <= w and keys inside the sequence.
        qpos = torch.arange(w)[:, None]
        kpos = torch.arange(3 * w)[None, :] - w
        chunk = torch.arange(c)[:, None, None] * w
        absolute = chunk + kpos
        keep = ((kpos - qpos).abs() <= w) & (absolute >= 0) & (absolute < s)
        scores = scores.masked_fill(~keep, float("-inf"))
        probs = scores.softmax(-1)
        ctx = torch.einsum("bhcxy,bhcyd->bhcxd", probs, v)
        ctx = ctx.reshape(b, self.heads, s, self.head).permute(0, 2, 1, 3).reshape(b, s, hidden)
        return self.out(ctx)


def build_longformer(batch=1, seq=512, hidden=768, heads=12, window=64):
    model = LongformerAttention(hidden, heads, window).eval()
    return model, {"hidden_states": torch.randn(batch, seq, hidden)}


# ----------------------------------------------------------------------------
# ResNet3D-18 (Hara et al. 2018; torchvision's r3d_18 layer structure):
# 3-D convolutions and pooling on video clips, narrow for the fixture.


class ResNet3d18(nn.Module):
    def __init__(self, width, classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, width, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False),
                                  nn.BatchNorm3d(width), nn.ReLU(), nn.MaxPool3d(3, 2, 1))
        layers, cin = [], width
        for mult, stride in [(1, 1), (2, 2), (4, 2), (8, 2)]:
            layers += [BasicBlock(cin, width * mult, stride, nn.Conv3d, nn.BatchNorm3d),
                       BasicBlock(width * mult, width * mult, 1, nn.Conv3d, nn.BatchNorm3d)]
            cin = width * mult
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        y = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool3d(y, 1), 1))


def build_resnet3d(batch=1, frames=8, size=32, width=8):
    model = randomize_batchnorm(ResNet3d18(width, 10)).eval()
    return model, {"clip": torch.randn(batch, 3, frames, size, size)}


# ----------------------------------------------------------------------------
# Export.


def export(model, inputs, path, opset=18, legacy_dynamic_axes=None):
    """Exports with torch.onnx's default (dynamo) exporter, as a user would,
    weights inside the file; or, given `legacy_dynamic_axes`, with the
    TorchScript exporter and those axes symbolic (its Shape -> Gather ->
    Unsqueeze -> Concat -> Reshape chains). Returns the reference outputs as
    numpy."""
    names = list(inputs)
    args = tuple(inputs[n] for n in names)
    if legacy_dynamic_axes is None:
        torch.onnx.export(model, args, path, input_names=names, output_names=["output"], dynamo=True,
                          opset_version=opset, external_data=False, verbose=False)
    else:
        torch.onnx.export(model, args, path, input_names=names, output_names=["output"], dynamo=False,
                          opset_version=min(opset, 17), dynamic_axes=legacy_dynamic_axes)
    with torch.no_grad():
        out = model(*args)
    return out.numpy()
