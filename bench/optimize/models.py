"""The nine models of the `tessera optimize` benchmark (bench/optimize/optimize.py).

Five come from tests/onnx/torch_models.py (ResNet-18, CSRNet's back end,
the InfoGAN generator, a BERT layer, Longformer attention); this file
builds the other four as their authors describe them, at their real sizes
with random weights, in eval mode:

- the DCGAN generator (Radford et al. 2016, as in PyTorch's examples):
  nz=100 noise as a 1x1 image, then ConvTranspose2d+BatchNorm+ReLU up to
  64x64x3 (ngf=64) with a Tanh at the end;
- FSRCNN (Dong et al. 2016) with d=56, s=12, m=4 for 2x upscaling: a 5x5
  feature extraction, a 1x1 shrinking, four 3x3 mapping layers, a 1x1
  expanding layer (each with a per-channel PReLU) and a 9x9 stride-2
  deconvolution, on one 256x256 luminance image (out: 512x512);
- a GCN block (Kipf and Welling 2017): two graph convolutions
  relu(A·X·W + b) on a dense, symmetrically normalized adjacency
  D^-1/2 (A + I) D^-1/2 of a random graph of 1024 nodes (about 10
  neighbours each), features 512 -> 256 -> 256;
- torchvision's Inception-v3 (weights=None, aux_logits=False,
  init_weights=True) at 1x3x299x299.

Each `build_*` returns (module in eval mode, example inputs as a dict of
name -> tensor), deterministic given torch's seed, like torch_models.py's.
"""
import os
import sys

import torch
from torch import nn

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
import torch_models as tm  # noqa: E402


# ----------------------------------------------------------------------------
# DCGAN's generator.


class DCGANGenerator(nn.Module):
    def __init__(self, nz=100, ngf=64, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, z):
        return self.main(z)


def build_dcgan(batch=16, nz=100, ngf=64):
    model = tm.randomize_batchnorm(DCGANGenerator(nz, ngf)).eval()
    return model, {"z": torch.randn(batch, nz, 1, 1)}


# ----------------------------------------------------------------------------
# FSRCNN.


class FSRCNN(nn.Module):
    def __init__(self, upscale=2, d=56, s=12, m=4, channels=1):
        super().__init__()
        layers = [nn.Conv2d(channels, d, 5, padding=2), nn.PReLU(d),
                  nn.Conv2d(d, s, 1), nn.PReLU(s)]
        for _ in range(m):
            layers += [nn.Conv2d(s, s, 3, padding=1), nn.PReLU(s)]
        layers += [nn.Conv2d(s, d, 1), nn.PReLU(d)]
        self.body = nn.Sequential(*layers)
        self.deconv = nn.ConvTranspose2d(d, channels, 9, upscale, 4, output_padding=upscale - 1)
        with torch.no_grad():
            # PReLU starts at 0.25 everywhere; vary the slopes per channel.
            for p in self.body:
                if isinstance(p, nn.PReLU):
                    p.weight.uniform_(0.1, 0.4)

    def forward(self, x):
        return self.deconv(self.body(x))


def build_fsrcnn(batch=1, side=256, upscale=2):
    model = FSRCNN(upscale).eval()
    return model, {"image": torch.randn(batch, 1, side, side)}


# ----------------------------------------------------------------------------
# A GCN block.


class GraphConv(nn.Module):
    """relu(A·X·W + b), computed in the order written: (A·X)·W."""

    def __init__(self, cin, cout):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(cin, cout) / cin ** 0.5)
        self.bias = nn.Parameter(torch.randn(cout) * 0.1)

    def forward(self, adjacency, x):
        return torch.relu(torch.matmul(torch.matmul(adjacency, x), self.weight) + self.bias)


class GCNBlock(nn.Module):
    def __init__(self, features=(512, 256, 256)):
        super().__init__()
        self.layers = nn.ModuleList(GraphConv(a, b) for a, b in zip(features, features[1:]))

    def forward(self, adjacency, x):
        for layer in self.layers:
            x = layer(adjacency, x)
        return x


def normalized_adjacency(nodes, degree):
    """D^-1/2 (A + I) D^-1/2 of a random undirected graph with about
    `degree` neighbours per node, dense."""
    edges = torch.rand(nodes, nodes) < degree / nodes
    a = (edges | edges.T).float()
    a.fill_diagonal_(1.0)
    d = a.sum(1).rsqrt()
    return d[:, None] * a * d[None, :]


def build_gcn(nodes=1024, features=(512, 256, 256), degree=10):
    model = GCNBlock(features).eval()
    return model, {"adjacency": normalized_adjacency(nodes, degree),
                   "features": torch.randn(nodes, features[0])}


# ----------------------------------------------------------------------------
# Inception-v3.


def build_inception_v3(batch=1, size=299):
    import torchvision
    model = torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=True)
    return tm.randomize_batchnorm(model).eval(), {"input": torch.randn(batch, 3, size, size)}


# ----------------------------------------------------------------------------
# The benchmark's nine, by name.

MODELS = {
    "resnet18": lambda: tm.build_resnet18(1),
    "csrnet_backend": lambda: tm.build_csrnet_backend(1, 28),
    "infogan_generator": lambda: tm.build_infogan(64),
    "dcgan_generator": lambda: build_dcgan(16),
    "fsrcnn": lambda: build_fsrcnn(1, 256),
    "gcn_block": lambda: build_gcn(1024),
    "bert_layer": lambda: tm.build_bert_layer(1, 128),
    "longformer_attention": lambda: tm.build_longformer(1, 1024, window=128),
    "inception_v3": lambda: build_inception_v3(1),
}

# What each is, for the table's notes and the README.
SIZES = {
    "resnet18": "torchvision ResNet-18, 1x3x224x224",
    "csrnet_backend": "CSRNet back end (config B), 1x512x28x28",
    "infogan_generator": "InfoGAN MNIST generator, batch 64",
    "dcgan_generator": "DCGAN generator nz=100 ngf=64, 64x64x3, batch 16",
    "fsrcnn": "FSRCNN(56,12,4) x2, 1x1x256x256 -> 512x512",
    "gcn_block": "2 GCN layers, 1024 nodes, 512->256->256",
    "bert_layer": "BERT-base layer, 128 tokens",
    "longformer_attention": "Longformer attention, 1024 tokens, window 128",
    "inception_v3": "torchvision Inception-v3, 1x3x299x299",
}
