"""The imperative workloads' cases: for each fixture, the workload (its file
workloads/NAME.py and entry def NAME) and a function making its seeded
inputs at a size, "test" (small, for the committed fixtures and a slow
reference interpreter) or "bench" (realistic CPU inference sizes, batch 1 or
small). Inputs are numpy float32 / int64 / bool arrays and Python
ints/floats/bools, keyed by the entry def's parameter names.

    import cases
    fn = cases.entry("ssd")
    inputs = cases.inputs("ssd", "bench")
"""
import importlib.util
import math
import os
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = ("test", "bench")

# fixture name -> (workload name, function(size) -> inputs)
CASES = {}


def case(workload, name=None):
    def register(make):
        CASES[name or workload] = (workload, make)
        return make
    return register


def workload_path(workload):
    return os.path.join(HERE, "workloads", f"{workload}.py")


def load(workload):
    """The workload file as a module."""
    spec = importlib.util.spec_from_file_location(f"imperative_{workload}", workload_path(workload))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def entry(name):
    """The entry def of a case (its workload's def of the same name)."""
    workload = CASES[name][0]
    return getattr(load(workload), workload)


def inputs(name, size):
    assert size in SIZES, size
    return CASES[name][1](size)


def rng(name, size, salt=0):
    # a seed from the case's name, so cases don't share random streams
    return np.random.default_rng([zlib.crc32(name.encode()), SIZES.index(size), salt])


def f32(a):
    return np.ascontiguousarray(a, dtype=np.float32)


def uniform_weight(r, shape, fan):
    # torch.nn's default initialization of RNN and linear weights
    k = 1.0 / math.sqrt(fan)
    return f32(r.uniform(-k, k, size=shape))


@case("yolov3")
def yolov3_inputs(size):
    r = rng("yolov3", size)
    # the stride-8 level of a 416 x 416 input, 3 anchors, 80 classes
    B, A, C, H, W = (2, 3, 4, 8, 8) if size == "test" else (1, 3, 80, 52, 52)
    return {
        "pred": f32(r.standard_normal((B, A * (5 + C), H, W))),
        "anchors": f32([[10, 13], [16, 30], [33, 23]]),
        "stride": 8.0,
    }


@case("ssd")
def ssd_inputs(size):
    r = rng("ssd", size)
    # SSD300: 8732 priors, 21 VOC classes
    B, N, C = (2, 300, 21) if size == "test" else (1, 8732, 21)
    priors = np.concatenate([r.uniform(0.0, 1.0, (N, 2)), r.uniform(0.05, 0.6, (N, 2))], 1)
    return {
        "loc": f32(r.standard_normal((B, N, 4))),
        "conf": f32(2.0 * r.standard_normal((B, N, C))),
        "priors": f32(priors),
        "var_xy": 0.1,
        "var_wh": 0.2,
        "score_thresh": 0.05,
        "img_w": 300.0,
        "img_h": 300.0,
    }


@case("fcos")
def fcos_inputs(size):
    r = rng("fcos", size)
    # the stride-8 level (P3) of an 800 x 1333 input, 80 classes; the grid
    # reaches past the image on the right and bottom, so clamping bites
    if size == "test":
        B, C, H, W, img_h, img_w = 2, 8, 10, 12, 75.0, 90.0
    else:
        B, C, H, W, img_h, img_w = 1, 80, 100, 168, 797.0, 1333.0
    return {
        "cls_score": f32(r.standard_normal((B, C, H, W)) - 2.0),
        "bbox_pred": f32(2.0 * r.standard_normal((B, 4, H, W)) + 1.0),
        "centerness": f32(r.standard_normal((B, 1, H, W))),
        "stride": 8,
        "scale": 1.0,
        "norm_on_bbox": True,
        "img_h": img_h,
        "img_w": img_w,
    }


@case("yolact")
def yolact_inputs(size):
    r = rng("yolact", size)
    # YOLACT-550: 138 x 138 prototypes, 32 of them, the top 100 detections
    H, W, K, N = (24, 24, 8, 10) if size == "test" else (138, 138, 32, 100)
    # relative boxes, some with their corners the wrong way round and some
    # past the edges, as sanitize_boxes expects
    boxes = r.uniform(-0.1, 1.1, (N, 4))
    return {
        "protos": f32(np.maximum(r.standard_normal((H, W, K)), 0.0)),
        "coeffs": f32(np.tanh(r.standard_normal((N, K)))),
        "boxes": f32(boxes),
        "padding": 1,
    }


def rnn_inputs(name, size, gates):
    r = rng(name, size)
    T, B, I, S = (8, 2, 16, 16) if size == "test" else (64, 1, 256, 256)
    G = gates * S
    return r, {
        "x": f32(r.standard_normal((T, B, I))),
        "h0": f32(0.5 * r.standard_normal((B, S))),
        "c0": f32(0.5 * r.standard_normal((B, S))),
        "w_ih": uniform_weight(r, (G, I), S),
        "w_hh": uniform_weight(r, (G, S), S),
    }


@case("lstm")
def lstm_inputs(size):
    r, d = rnn_inputs("lstm", size, 4)
    G = d["w_ih"].shape[0]
    S = d["h0"].shape[1]
    d["b_ih"] = uniform_weight(r, (G,), S)
    d["b_hh"] = uniform_weight(r, (G,), S)
    return d


@case("nasrnn")
def nasrnn_inputs(size):
    return rnn_inputs("nasrnn", size, 8)[1]


def seq2seq_case(size, eos_bias):
    r = rng("seq2seq", size, 2)  # a stream whose sequences end at different steps
    B, S, E, V, max_len = (4, 16, 16, 20, 8) if size == "test" else (1, 256, 256, 5000, 64)
    G = 3 * S
    eos = 2
    b_out = uniform_weight(r, (V,), S)
    b_out[eos] += eos_bias
    return {
        "enc_h": f32(np.tanh(r.standard_normal((B, S)))),
        "emb": f32(r.standard_normal((V, E))),
        "w_ih": uniform_weight(r, (G, E), S),
        "w_hh": uniform_weight(r, (G, S), S),
        "b_ih": uniform_weight(r, (G,), S),
        "b_hh": uniform_weight(r, (G,), S),
        "w_out": f32(r.standard_normal((V, S)) * (4.0 / math.sqrt(S))),
        "b_out": b_out,
        "sos": 1,
        "eos": eos,
        "max_len": max_len,
    }


# Two cases of seq2seq, the same weights but for eos's output bias, one per
# way out of its while loop: "seq2seq" stops when every sequence has
# produced eos (at the test size after 5 of max_len = 8 steps, at the bench
# size after 22 of 64), "seq2seq_maxlen" runs to max_len with every sequence
# still going (make_fixtures.py prints which way each went).
@case("seq2seq")
def seq2seq_inputs(size):
    return seq2seq_case(size, 2.0)


@case("seq2seq", "seq2seq_maxlen")
def seq2seq_maxlen_inputs(size):
    return seq2seq_case(size, 0.0)


@case("attention")
def attention_inputs(size):
    r = rng("attention", size)
    B, T, E, n_heads = (2, 6, 32, 4) if size == "test" else (1, 64, 512, 8)
    return {
        "x": f32(r.standard_normal((B, T, E))),
        "w_q": uniform_weight(r, (E, E), E),
        "w_k": uniform_weight(r, (E, E), E),
        "w_v": uniform_weight(r, (E, E), E),
        "w_o": uniform_weight(r, (E, E), E),
        "n_heads": n_heads,
        "scale": 1.0 / math.sqrt(E // n_heads),
    }


@case("normalize")
def normalize_inputs(size):
    r = rng("normalize", size)
    # test: [0, 1] values (the scaling branch taken); bench: an 800 x 1333
    # image with [0, 255] values (not taken)
    if size == "test":
        img = r.uniform(0.0, 1.0, (2, 3, 30, 40))
    else:
        img = r.uniform(0.0, 255.0, (1, 3, 800, 1333))
    return {
        "img": f32(img),
        "mean": f32([123.675, 116.28, 103.53]),
        "std": f32([58.395, 57.12, 57.375]),
        "to_rgb": True,
        "size_divisor": 32,
    }


@case("offset2bbox")
def offset2bbox_inputs(size):
    r = rng("offset2bbox", size)
    # bench: Faster R-CNN's bbox head, 1000 proposals, 81 classes
    N, C, img_h, img_w = (200, 8, 600.0, 800.0) if size == "test" else (1000, 81, 800.0, 1333.0)
    xy = r.uniform(0.0, 1.0, (N, 2)) * [img_w, img_h]
    wh = r.uniform(8.0, 300.0, (N, 2))
    deltas = r.standard_normal((N, 4 * C))
    # some extreme size offsets, for the ratio clamp
    deltas[r.uniform(size=(N, 4 * C)) < 0.02] *= 40.0
    return {
        "rois": f32(np.concatenate([xy - wh / 2, xy + wh / 2], 1)),
        "deltas": f32(deltas),
        "means": f32([0.0, 0.0, 0.0, 0.0]),
        "stds": f32([0.1, 0.1, 0.2, 0.2]),
        "max_ratio": abs(math.log(16.0 / 1000.0)),
        "img_h": img_h,
        "img_w": img_w,
    }
