"""Writes tessera's ONNX test fixtures.

Each fixture is a folder tests/onnx/fixtures/NAME/ with model.onnx, one
inputs/INPUT.npy per graph input (seeded random float32) and one
outputs/OUTPUT.npy per graph output, computed by ONNX Runtime: the
reference tessera's outputs are compared with (crates/onnx/tests).
The nan_* fixtures' inputs hold NaN, +inf and -inf. Where Runtime's NaN
depends on where in a window or row the NaN stands (MaxPool, GlobalMaxPool,
ReduceMax; the ONNX reference implementation, onnx.reference, drops NaN in
padded MaxPool windows too), their outputs are numpy's maximum over the
window or row, which is NaN when a NaN is in it, after checking that
Runtime agrees with numpy on every element no NaN reaches.
tests/onnx/malformed/ gets models that must be rejected with a clear error.

Run through scripts/onnx-fixtures.sh, which installs the pinned packages.
"""

import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures")
MALFORMED = os.path.join(ROOT, "malformed")
F32 = TensorProto.FLOAT


class Model:
    """A graph under construction: inputs, initializers, nodes."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.inputs, self.outputs, self.inits, self.nodes = [], [], [], []
        self.feeds = {}
        self.count = 0

    def input(self, name, shape):
        self.inputs.append(helper.make_tensor_value_info(name, F32, shape))
        self.feeds[name] = self.rng.standard_normal(shape).astype(np.float32)
        return name

    def specials(self, name):
        """Makes about a tenth of input `name`'s elements NaN, and as many
        each +inf and -inf."""
        x = self.feeds[name]
        u = self.rng.random(x.shape)
        x[u < 0.1] = np.nan
        x[(u >= 0.1) & (u < 0.2)] = np.inf
        x[(u >= 0.2) & (u < 0.3)] = -np.inf

    def int_input(self, name, shape, high):
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.INT64, shape))
        self.feeds[name] = self.rng.integers(0, high, shape).astype(np.int64)
        return name

    def weight(self, name, shape, scale=0.5):
        value = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op, inputs, outputs=1, **attrs):
        self.count += 1
        names = [f"{op.lower()}{self.count}_{k}" for k in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names, name=f"{op}_{self.count}", **attrs))
        return names[0] if outputs == 1 else names

    def output(self, name):
        self.outputs.append(helper.make_tensor_value_info(name, F32, None))

    def model(self, opset):
        graph = helper.make_graph(self.nodes, "g", self.inputs, self.outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return m


def save(name, m, build_opset=17, external=False, expect=None):
    """`expect`, if given, computes the one output from the one input with
    numpy, in place of Runtime (see numpy_results)."""
    model = m.model(build_opset)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    results = session.run(None, m.feeds)
    if expect is not None:
        results = numpy_results(name, expect(*m.feeds.values()), results)
    # The outputs' shapes, as Runtime computed them, complete the model.
    names = [o.name for o in model.graph.output]
    del model.graph.output[:]
    for out, r in zip(names, results):
        model.graph.output.append(helper.make_tensor_value_info(out, F32, list(r.shape)))
    onnx.checker.check_model(model)
    folder = os.path.join(FIXTURES, name)
    os.makedirs(os.path.join(folder, "inputs"))
    os.makedirs(os.path.join(folder, "outputs"))
    if external:
        # Every initializer in one file beside the model, at its own offset.
        onnx.save_model(model, os.path.join(folder, "model.onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    else:
        onnx.save(model, os.path.join(folder, "model.onnx"))
    for k, v in m.feeds.items():
        np.save(os.path.join(folder, "inputs", f"{k}.npy"), v)
    for out, v in zip(session.get_outputs(), results):
        np.save(os.path.join(folder, "outputs", f"{out.name}.npy"), v)


def numpy_results(name, want, runtime):
    """numpy's output `want`, checked against Runtime's where it is not NaN
    (no NaN reached it): there they must be equal."""
    [got] = runtime
    assert want.shape == got.shape, name
    reached = np.isnan(want)
    np.testing.assert_array_equal(got[~reached], want[~reached], err_msg=name)
    print(f"{name}: Runtime gives a number for {int((reached & ~np.isnan(got)).sum())} "
          f"of the {int(reached.sum())} elements a NaN reaches")
    return [want.astype(np.float32)]


def max_pool(x, kernel, strides, pads):
    """numpy's MaxPool of an N x C x H x W `x`: the maximum over each window,
    padding at -inf (so it never wins)."""
    (kh, kw), (sh, sw), (t, l, b, r) = kernel, strides, pads
    x = np.pad(x, [(0, 0), (0, 0), (t, b), (l, r)], constant_values=-np.inf)
    windows = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    return windows[:, :, ::sh, ::sw].max(axis=(4, 5))


def single(name, op, shapes, weights=(), consts=(), opset=17, specials=False, expect=None, **attrs):
    """One node: graph inputs of `shapes`, then weights, then constants
    (integer constants as int64). With `specials`, about a tenth of the
    inputs' elements are NaN and as many each +inf and -inf."""
    m = Model(sum(map(ord, name)))
    ins = [m.input(f"x{k}", s) for k, s in enumerate(shapes)]
    if specials:
        for x in ins:
            m.specials(x)
    ins += [m.weight(f"w{k}", s) if s is not None else "" for k, s in enumerate(weights)]
    ins += [m.const(f"c{k}", c.astype(np.int64) if c.dtype.kind == "i" else c) for k, c in enumerate(map(np.asarray, consts))]
    m.output(m.node(op, ins, **attrs))
    save(name, m, opset, expect=expect)


def fixtures():
    # Convolutions: strides, pads (asymmetric too), dilations, groups, auto_pad, bias, 1-D and 3-D.
    single("conv_pad1_bias", "Conv", [[1, 3, 7, 7]], [[4, 3, 3, 3], [4]], pads=[1, 1, 1, 1])
    single("conv_stride2_asym_pads", "Conv", [[2, 3, 8, 9]], [[5, 3, 3, 3]], strides=[2, 2], pads=[0, 1, 2, 0])
    single("conv_dilated_grouped", "Conv", [[1, 4, 9, 9]], [[6, 2, 3, 3], [6]], dilations=[2, 2], group=2, pads=[2, 2, 2, 2])
    single("conv_depthwise", "Conv", [[1, 4, 6, 6]], [[4, 1, 3, 3]], group=4, pads=[1, 1, 1, 1])
    single("conv_same_upper", "Conv", [[1, 2, 7, 8]], [[3, 2, 4, 4]], strides=[2, 2], auto_pad="SAME_UPPER")
    single("conv_same_lower", "Conv", [[1, 2, 7, 8]], [[3, 2, 4, 4]], strides=[2, 2], auto_pad="SAME_LOWER")
    single("conv_valid", "Conv", [[1, 2, 7, 8]], [[3, 2, 3, 2]], auto_pad="VALID")
    single("conv_k1x7", "Conv", [[1, 3, 6, 10]], [[2, 3, 1, 7]], pads=[0, 3, 0, 3])
    # Strided convolutions run as stride-1 ones on the input's phases (or every s-th point for 1x1).
    single("conv_stride2_grouped_bias", "Conv", [[1, 4, 9, 8]], [[6, 2, 3, 3], [6]], strides=[2, 2], group=2,
           pads=[1, 1, 1, 1])
    single("conv_stride3_k5", "Conv", [[2, 2, 11, 10]], [[3, 2, 5, 5]], strides=[3, 3], pads=[2, 1, 0, 2])
    single("conv_1x1_stride2", "Conv", [[1, 3, 7, 6]], [[4, 3, 1, 1], [4]], strides=[2, 2])
    single("conv_stride_2x1", "Conv", [[1, 2, 7, 7]], [[3, 2, 3, 3]], strides=[2, 1], pads=[1, 1, 1, 1])
    single("conv_stride2_dilated", "Conv", [[1, 2, 9, 9]], [[3, 2, 3, 3]], strides=[2, 2], dilations=[2, 2])
    single("conv1d", "Conv", [[2, 3, 11]], [[4, 3, 3], [4]], strides=[2], pads=[1, 1])
    single("conv3d", "Conv", [[1, 2, 4, 5, 5]], [[3, 2, 3, 3, 3], [3]], pads=[1, 1, 1, 1, 1, 1])
    # Channel-blocked convolutions: whole input blocks (32 channels), output channels that are not (20), a
    # stride; and groups of exactly one block (16 channels) each.
    single("conv_blocked_c32_f20", "Conv", [[1, 32, 6, 7]], [[20, 32, 3, 3], [20]], strides=[2, 1], pads=[1, 1, 1, 1])
    single("conv_grouped_blocks", "Conv", [[2, 32, 5, 6]], [[32, 16, 3, 3], [32]], group=2, pads=[1, 1, 1, 1])
    # Pooling.
    single("maxpool_k3_s2_p1", "MaxPool", [[1, 3, 9, 9]], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    single("maxpool_k2", "MaxPool", [[2, 2, 6, 7]], kernel_shape=[2, 2], strides=[2, 2])
    single("avgpool_exclude_pad", "AveragePool", [[1, 2, 7, 7]], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    single("avgpool_include_pad", "AveragePool", [[1, 2, 7, 7]], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)
    single("global_avgpool", "GlobalAveragePool", [[2, 3, 5, 4]])
    single("global_maxpool", "GlobalMaxPool", [[2, 3, 5, 4]])
    # Matrix products.
    single("gemm_transb_alpha_beta", "Gemm", [[3, 5]], [[4, 5], [4]], transB=1, alpha=0.5, beta=2.0)
    single("gemm_transa", "Gemm", [[5, 3]], [[5, 4], [4]], transA=1)
    single("gemm_full_c", "Gemm", [[3, 5]], [[5, 4], [3, 4]])
    single("gemm_no_c", "Gemm", [[3, 5]], [[4, 5]], transB=1)
    single("matmul_2d", "MatMul", [[3, 5], [5, 4]])
    single("matmul_3d_2d", "MatMul", [[2, 3, 5]], [[5, 4]])
    single("matmul_batched", "MatMul", [[2, 3, 5], [2, 5, 4]])
    single("matmul_4d", "MatMul", [[1, 2, 3, 5], [1, 2, 5, 4]])
    # Normalization, activations, softmax.
    m = Model(7)
    x = m.input("x", [2, 3, 4, 5])
    ins = [x, m.weight("scale", [3]), m.weight("bias", [3]), m.weight("mean", [3])]
    m.inits.append(numpy_helper.from_array((m.rng.random(3) + 0.5).astype(np.float32), "var"))
    m.output(m.node("BatchNormalization", ins + ["var"], epsilon=1e-3))
    save("batchnorm", m)
    for op in ["Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Erf"]:
        single(op.lower(), op, [[2, 3, 4]])
    single("softmax_last", "Softmax", [[2, 3, 5]])
    single("softmax_negative_axis", "Softmax", [[2, 5]], axis=-1)
    single("softmax_opset11_axis1", "Softmax", [[3, 6]], opset=11, axis=1)
    # Broadcasting arithmetic.
    single("add_same", "Add", [[2, 3, 4], [2, 3, 4]])
    single("add_channel_bias", "Add", [[1, 4, 3, 3]], [[4, 1, 1]])
    single("mul_row", "Mul", [[3, 5]], [[5]])
    single("sub_bcast_both", "Sub", [[3, 1, 4], [1, 5, 1]])
    single("div_scalar", "Div", [[2, 3]], consts=[np.array(4.0, dtype=np.float32)])
    single("mul_rank_mismatch_var", "Mul", [[2, 3, 4], [3, 4]])
    # Layout.
    single("flatten_axis1", "Flatten", [[2, 3, 2, 2]])
    single("flatten_axis2", "Flatten", [[2, 3, 2, 2]], axis=2)
    single("reshape_infer", "Reshape", [[2, 3, 4]], consts=[np.array([0, -1, 2], dtype=np.int64)])
    single("transpose_0231", "Transpose", [[2, 3, 4, 5]], perm=[0, 2, 3, 1])
    single("transpose_default", "Transpose", [[3, 4]])
    single("concat_axis1", "Concat", [[2, 3, 4], [2, 2, 4], [2, 1, 4]], axis=1)
    single("concat_negative_axis", "Concat", [[2, 3], [2, 4]], axis=-1)
    single("unsqueeze_squeeze", "Unsqueeze", [[3, 4]], consts=[np.array([0, 3], dtype=np.int64)])
    single("squeeze_opset11", "Squeeze", [[3, 1, 4, 1]], opset=11, axes=[1, 3])
    # PyTorch's shape subgraph: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, folded at import.
    m = Model(11)
    x = m.input("x", [2, 3, 4])
    shape = m.node("Shape", [x])
    batch = m.node("Gather", [shape, m.const("zero", np.array(0, dtype=np.int64))], axis=0)
    batch = m.node("Unsqueeze", [batch, m.const("axes", np.array([0], dtype=np.int64))])
    target = m.node("Concat", [batch, m.const("rest", np.array([-1], dtype=np.int64))], axis=0)
    m.output(m.node("Reshape", [x, target]))
    save("shape_chain_reshape", m)
    # A ResNet basic block: conv-bn-relu-conv-bn, the identity added, relu.
    m = Model(21)
    x = m.input("x", [1, 4, 8, 8])

    def conv_bn(inp, name):
        y = m.node("Conv", [inp, m.weight(f"{name}_w", [4, 4, 3, 3], 0.3)], pads=[1, 1, 1, 1])
        stats = [m.weight(f"{name}_{p}", [4]) for p in ["scale", "bias", "mean"]]
        m.inits.append(numpy_helper.from_array((m.rng.random(4) + 0.5).astype(np.float32), f"{name}_var"))
        return m.node("BatchNormalization", [y] + stats + [f"{name}_var"])

    y = m.node("Relu", [conv_bn(x, "a")])
    y = m.node("Add", [conv_bn(y, "b"), x])
    m.output(m.node("Relu", [y]))
    save("resnet_basic_block", m)
    # Batch norms of channel-blocked values that do not fold into a convolution's weights: after a residual
    # add (20 channels: the last block partly padding), and of a convolution whose result has a second reader.
    m = Model(22)
    x = m.input("x", [1, 16, 6, 5])

    def stats(name, c):
        s = [m.weight(f"{name}_{p}", [c]) for p in ["scale", "bias", "mean"]]
        m.inits.append(numpy_helper.from_array((m.rng.random(c) + 0.5).astype(np.float32), f"{name}_var"))
        return s + [f"{name}_var"]

    a = m.node("Conv", [x, m.weight("a_w", [20, 16, 3, 3], 0.3)], pads=[1, 1, 1, 1])
    b = m.node("Conv", [x, m.weight("b_w", [20, 16, 1, 1], 0.3), m.weight("b_b", [20])])
    y = m.node("Relu", [m.node("BatchNormalization", [m.node("Add", [a, b])] + stats("p", 20), epsilon=1e-3)])
    c = m.node("Conv", [y, m.weight("c_w", [20, 20, 3, 3], 0.3)], pads=[1, 1, 1, 1])
    z = m.node("BatchNormalization", [c] + stats("q", 20))
    m.output(m.node("Conv", [m.node("Add", [z, c]), m.weight("d_w", [8, 20, 1, 1], 0.3)]))
    save("batchnorm_blocked_unfolded", m)
    # Channel concatenations of blocked values: at a whole block (16 + 20 channels), read by a convolution;
    # and after a partly padded block (20 + 16), which is not blocked.
    m = Model(23)
    x = m.input("x", [1, 16, 5, 6])
    a = m.node("Conv", [x, m.weight("a_w", [16, 16, 3, 3], 0.3)], pads=[1, 1, 1, 1])
    b = m.node("Relu", [m.node("Conv", [x, m.weight("b_w", [20, 16, 1, 1], 0.3)])])
    joined = m.node("Concat", [a, b], axis=1)
    m.output(m.node("Conv", [joined, m.weight("c_w", [8, 36, 3, 3], 0.3)], pads=[1, 1, 1, 1]))
    m.output(m.node("Concat", [b, a], axis=-3))
    save("concat_blocked", m)
    # A classifier head: global pooling, flatten, Gemm, softmax.
    m = Model(31)
    x = m.input("x", [2, 8, 3, 3])
    y = m.node("GlobalAveragePool", [x])
    y = m.node("Flatten", [y])
    y = m.node("Gemm", [y, m.weight("fc_w", [5, 8]), m.weight("fc_b", [5])], transB=1)
    m.output(m.node("Softmax", [y], axis=1))
    save("classifier_head", m)
    more_fixtures()


def more_fixtures():
    # Transposed convolutions (DCGAN/InfoGAN generators).
    single("conv_transpose_s2_p1", "ConvTranspose", [[1, 3, 4, 4]], [[3, 2, 4, 4], [2]], strides=[2, 2], pads=[1, 1, 1, 1])
    single("conv_transpose_outpad_grouped", "ConvTranspose", [[1, 4, 3, 3]], [[4, 1, 3, 3]], strides=[2, 2], pads=[1, 0, 1, 0], output_padding=[1, 1], group=2)
    single("conv_transpose_dilated", "ConvTranspose", [[2, 2, 3, 4]], [[2, 3, 2, 2]], dilations=[2, 2])
    # Stride 2 with whole blocks of output channels: the output phases computed apart, on a blocked input,
    # on a plain one (3 channels) and with a 3x3 kernel whose phases have 2 and 1 rows.
    single("conv_transpose_phases", "ConvTranspose", [[2, 16, 3, 3]], [[16, 16, 4, 4], [16]], strides=[2, 2],
           pads=[1, 1, 1, 1])
    single("conv_transpose_phases_plain_in", "ConvTranspose", [[1, 3, 4, 5]], [[3, 32, 4, 4], [32]],
           strides=[2, 2], pads=[1, 1, 1, 1])
    single("conv_transpose_phases_k3", "ConvTranspose", [[1, 16, 3, 4]], [[16, 16, 3, 3], [16]], strides=[2, 2],
           pads=[1, 1, 1, 1], output_padding=[1, 1])
    # 1-D (as 2-D over a height of 1) and 3-D; pads from auto_pad or from an output_shape that extends the
    # output at the end, or cuts it (the padding split, the odd pad at the begin).
    single("conv_transpose1d_same", "ConvTranspose", [[1, 3, 7]], [[3, 4, 3], [4]], strides=[2], auto_pad="SAME_UPPER")
    single("conv_transpose1d_output_shape", "ConvTranspose", [[2, 4, 5]], [[4, 1, 4]], strides=[3], group=2,
           dilations=[2], output_shape=[21])
    single("conv_transpose1d_output_shape_cut", "ConvTranspose", [[2, 4, 5]], [[4, 1, 4]], strides=[3], group=2,
           dilations=[2], output_shape=[16])
    single("conv_transpose3d", "ConvTranspose", [[1, 2, 3, 4, 3]], [[2, 3, 2, 3, 2], [3]], strides=[2, 1, 2],
           pads=[1, 0, 0, 0, 1, 1], output_padding=[1, 0, 0])
    # Activations with parameters.
    single("leaky_relu", "LeakyRelu", [[2, 3, 4]], alpha=0.2)
    single("clip_inputs", "Clip", [[3, 5]], consts=[np.array(-0.5, dtype=np.float32), np.array(0.7, dtype=np.float32)])
    single("gelu_opset20", "Gelu", [[2, 6]], opset=20)
    single("prelu_channel", "PRelu", [[1, 3, 2, 2]], [[3, 1, 1]])
    # Normalization and reductions.
    single("layernorm_last_axis", "LayerNormalization", [[2, 3, 6]], [[6], [6]], epsilon=1e-5)
    single("reduce_mean_keep", "ReduceMean", [[2, 3, 5]], axes=[-1])
    single("reduce_mean_no_keep", "ReduceMean", [[2, 3, 4, 5]], axes=[2, 3], keepdims=0)
    single("reduce_sum_axes_input", "ReduceSum", [[2, 3, 4]], consts=[np.array([1], dtype=np.int64)])
    single("reduce_max_keep", "ReduceMax", [[3, 4]], axes=[1])
    reduce_axes_graph_input()
    empty_axes_graph_input()
    quantized_conv_fixtures()
    computed_shape_fixtures()
    # Sequences longer than the importer unrolls (256 steps) are loops.
    single("lstm_loop_bidirectional", "LSTM", [[300, 2, 3]], [[2, 16, 3], [2, 16, 4], [2, 32]], hidden_size=4,
           direction="bidirectional", opset=14)
    single("gru_loop_reverse", "GRU", [[260, 1, 3]], [[1, 12, 3], [1, 12, 4], [1, 24]], hidden_size=4,
           direction="reverse", linear_before_reset=1, opset=14)
    single("rnn_loop", "RNN", [[257, 2, 3]], [[1, 4, 3], [1, 4, 4]], hidden_size=4, opset=14)
    nan_fixtures()
    # Slicing, padding, splitting.
    single("slice_basic", "Slice", [[5, 6]], consts=[np.array([1, 0]), np.array([4, 6])])
    single("slice_axes_steps", "Slice", [[4, 7, 5]], consts=[np.array([1, 6]), np.array([100, 0]), np.array([1, -1]), np.array([2, -2])])
    single("slice_negative_starts", "Slice", [[3, 8]], consts=[np.array([-5]), np.array([-1]), np.array([1])])
    single("pad_constant", "Pad", [[1, 2, 3, 3]], consts=[np.array([0, 0, 1, 2, 0, 0, 2, 1]), np.array(0.5, dtype=np.float32)])
    # A transpose of the last two axes read by a matrix product (as its transposed operand, never copied) and
    # by a ReLU (which gets it computed).
    m = Model(45)
    a, b = m.input("a", [2, 3, 5]), m.input("b", [2, 4, 5])
    bt = m.node("Transpose", [b], perm=[0, 2, 1])
    m.output(m.node("MatMul", [a, bt]))
    m.output(m.node("Relu", [bt]))
    save("transpose_matmul", m)
    m = Model(41)
    x = m.input("x", [2, 6, 3])
    parts = m.node("Split", [x, m.const("sizes", np.array([1, 3, 2]))], outputs=3, axis=1)
    for p in parts:
        m.output(p)
    save("split_three", m)
    # Embedding lookup: a constant table, indices given.
    m = Model(43)
    ids = m.int_input("ids", [2, 3], 10)
    m.output(m.node("Gather", [m.weight("table", [10, 4]), ids], axis=0))
    save("gather_embedding", m)
    # A BERT encoder layer with 2 heads (hidden 8, sequence 4), GELU as its erf form.
    m = Model(51)
    x = m.input("x", [1, 4, 8])

    def dense(inp, name, k, n):
        y = m.node("MatMul", [inp, m.weight(f"{name}_w", [k, n], 0.3)])
        return m.node("Add", [y, m.weight(f"{name}_b", [n])])

    def heads(inp):
        y = m.node("Reshape", [inp, m.const(f"hshape{m.count}", np.array([1, 4, 2, 4]))])
        return m.node("Transpose", [y], perm=[0, 2, 1, 3])

    q, k, v = (heads(dense(x, p, 8, 8)) for p in ["q", "k", "v"])
    kt = m.node("Transpose", [k], perm=[0, 1, 3, 2])
    scores = m.node("Div", [m.node("MatMul", [q, kt]), m.const("sqrt_d", np.array(2.0, dtype=np.float32))])
    ctx = m.node("MatMul", [m.node("Softmax", [scores], axis=-1), v])
    ctx = m.node("Reshape", [m.node("Transpose", [ctx], perm=[0, 2, 1, 3]), m.const("back", np.array([1, 4, 8]))])
    h = m.node("Add", [dense(ctx, "o", 8, 8), x])
    h = m.node("LayerNormalization", [h, m.weight("ln1_s", [8]), m.weight("ln1_b", [8])], axis=-1)
    f = dense(h, "i", 8, 16)
    erf = m.node("Erf", [m.node("Div", [f, m.const("sqrt2", np.array(1.4142135, dtype=np.float32))])])
    gelu = m.node("Mul", [m.node("Mul", [f, m.const("half", np.array(0.5, dtype=np.float32))]),
                          m.node("Add", [erf, m.const("one", np.array(1.0, dtype=np.float32))])])
    f = m.node("Add", [dense(gelu, "f", 16, 8), h])
    m.output(m.node("LayerNormalization", [f, m.weight("ln2_s", [8]), m.weight("ln2_b", [8])], axis=-1))
    save("bert_layer_2_heads", m)
    # Einsum matrix products (Longformer's attention is written with them).
    single("einsum_batched", "Einsum", [[2, 3, 4], [2, 4, 5]], equation="bij,bjk->bik")
    single("einsum_attention_scores", "Einsum", [[1, 2, 4, 3], [1, 2, 5, 3]], equation="bhid,bhjd->bhij")
    single("einsum_transposed_b", "Einsum", [[3, 4], [5, 4]], equation="ij,kj->ik")
    # Where (an attention mask) and Expand, broadcasting.
    m = Model(81)
    scores = m.input("scores", [2, 3, 4])
    mask = numpy_helper.from_array(m.rng.random([1, 4]) > 0.4, "mask")
    m.inits.append(mask)
    m.output(m.node("Where", ["mask", scores, m.const("neg", np.array(-1e4, dtype=np.float32))]))
    save("where_mask", m)
    # An attention mask given as int64, cast to float as BERT's exports do.
    m = Model(83)
    x = m.input("x", [2, 5])
    mask = m.int_input("mask", [2, 5], 2)
    bias = m.node("Mul", [m.node("Sub", [m.const("one_f", np.array(1.0, dtype=np.float32)),
                                         m.node("Cast", [mask], to=TensorProto.FLOAT)]),
                          m.const("big", np.array(-1e4, dtype=np.float32))])
    m.output(m.node("Add", [x, bias]))
    save("cast_mask", m)
    single("expand_rank_up", "Expand", [[3, 1]], consts=[np.array([2, 3, 5])])
    # ConstantOfShape and Range fold at import.
    m = Model(71)
    x = m.input("x", [2, 5])
    ones = m.node("ConstantOfShape", [m.const("shape", np.array([2, 5], dtype=np.int64))],
                  value=numpy_helper.from_array(np.array([1.5], dtype=np.float32)))
    steps = m.node("Range", [m.const("start", np.array(0.0, dtype=np.float32)),
                             m.const("limit", np.array(2.5, dtype=np.float32)),
                             m.const("delta", np.array(0.5, dtype=np.float32))])
    m.output(m.node("Add", [m.node("Mul", [x, ones]), steps]))
    save("constant_of_shape_range", m)
    # Pooling with ceil_mode, 3-D pooling.
    single("maxpool_ceil_mode", "MaxPool", [[1, 2, 8, 8]], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    single("maxpool_ceil_mode_pads", "MaxPool", [[1, 2, 8, 8]], kernel_shape=[3, 3], strides=[2, 2],
           pads=[1, 1, 1, 1], ceil_mode=1)
    single("avgpool_ceil_mode", "AveragePool", [[1, 2, 7, 9]], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    single("maxpool3d", "MaxPool", [[1, 2, 5, 6, 7]], kernel_shape=[3, 3, 3], strides=[2, 2, 2],
           pads=[1, 1, 1, 1, 1, 1])
    single("avgpool3d_include_pad", "AveragePool", [[1, 2, 4, 6, 5]], kernel_shape=[2, 3, 3], strides=[1, 2, 2],
           pads=[0, 1, 1, 1, 1, 0], count_include_pad=1)
    single("global_avgpool3d", "GlobalAveragePool", [[2, 3, 2, 4, 3]])
    single("global_maxpool3d", "GlobalMaxPool", [[2, 3, 2, 4, 3]])
    # Rank 5: elementwise, broadcasting, softmax, batched products (Longformer's chunks).
    single("relu_rank5", "Relu", [[2, 1, 3, 4, 2]])
    single("add_bcast_rank5", "Add", [[2, 1, 3, 4, 2], [1, 3, 1, 4, 1]])
    single("softmax_rank5", "Softmax", [[1, 2, 3, 2, 5]], axis=-1)
    single("einsum_batch3", "Einsum", [[1, 2, 3, 4, 5], [1, 2, 3, 6, 5]], equation="bhcxd,bhcyd->bhcxy")
    single("matmul_5d", "MatMul", [[1, 2, 3, 4, 5], [1, 2, 3, 5, 2]])
    # Comparisons and logic: float and int64 operands, broadcasting, a computed
    # condition of a lower rank than Where's result.
    m = Model(91)
    x, y = m.input("x", [2, 3, 4]), m.input("y", [3, 1])
    m.output(m.node("Where", [m.node("Less", [x, y]), x, y]))
    save("less_where", m)
    m = Model(93)
    ids = m.int_input("ids", [2, 3, 4], 3)
    x = m.input("x", [2, 3, 4])
    e = m.node("Equal", [ids, m.const("one", np.array([1, 1, 0, 1], dtype=np.int64))])
    g = m.node("GreaterOrEqual", [ids, m.const("two", np.array(2, dtype=np.int64))])
    le = m.node("LessOrEqual", [x, m.const("half", np.array(0.5, dtype=np.float32))])
    gt = m.node("Greater", [x, m.const("low", np.array(-0.5, dtype=np.float32))])
    keep = m.node("And", [m.node("Or", [e, m.node("Not", [g])]), m.node("And", [le, gt])])
    m.output(m.node("Cast", [keep], to=TensorProto.FLOAT))
    save("comparisons_logic", m)
    m = Model(95)
    scores, gate = m.input("scores", [2, 3, 5]), m.input("gate", [5])
    cond = m.node("Greater", [gate, m.const("zero", np.array(0.0, dtype=np.float32))])
    m.output(m.node("Where", [cond, scores, m.const("neg", np.array(-1e4, dtype=np.float32))]))
    save("where_computed_condition", m)
    # Casts through bool and int64; a padding mask reshaped as int64.
    m = Model(97)
    x = m.input("x", [3, 4])
    b = m.node("Cast", [m.node("Relu", [x])], to=TensorProto.BOOL)
    i = m.node("Cast", [b], to=TensorProto.INT64)
    m.output(m.node("Cast", [i], to=TensorProto.FLOAT))
    save("cast_bool_int64", m)
    m = Model(99)
    x, mask = m.input("x", [2, 3, 4, 5]), m.int_input("mask", [2, 5], 2)
    wide = m.node("Unsqueeze", [mask, m.const("axes", np.array([1, 2], dtype=np.int64))])
    pad = m.node("Equal", [wide, m.const("zero", np.array(0, dtype=np.int64))])
    m.output(m.node("Where", [pad, m.const("neg", np.array(-1e4, dtype=np.float32)), x]))
    save("unsqueeze_int_mask", m)
    # Pads larger than the kernel's reach (K - 1 < p): phases of the sub-pixel form start inside the input.
    single("conv_transpose_large_pads", "ConvTranspose", [[1, 2, 5, 5]], [[2, 3, 2, 2]], strides=[2, 2],
           pads=[2, 1, 2, 2])
    # Index arithmetic on constants an exporter leaves unfolded: a band |key - query| <= 1 from Range.
    m = Model(101)
    x = m.input("x", [2, 4, 4])
    rows = m.node("Unsqueeze", [m.node("Range", [m.const("r0", np.array(0, dtype=np.int64)),
                                                 m.const("r1", np.array(4, dtype=np.int64)),
                                                 m.const("r2", np.array(1, dtype=np.int64))]),
                                m.const("ax", np.array([1], dtype=np.int64))])
    cols = m.node("Range", [m.const("c0", np.array(0, dtype=np.int64)), m.const("c1", np.array(4, dtype=np.int64)),
                            m.const("c2", np.array(1, dtype=np.int64))])
    band = m.node("LessOrEqual", [m.node("Abs", [m.node("Sub", [cols, rows])]), m.const("one", np.array(1, dtype=np.int64))])
    m.output(m.node("Where", [band, x, m.const("ninf", np.array(-1e4, dtype=np.float32))]))
    save("band_from_constants", m)
    # Weights in an external data file (offsets into one file, as exporters write large models).
    m = Model(103)
    x = m.input("x", [1, 3, 6, 6])
    y = m.node("Relu", [m.node("Conv", [x, m.weight("w1", [4, 3, 3, 3]), m.weight("b1", [4])], pads=[1, 1, 1, 1])])
    m.output(m.node("Conv", [y, m.weight("w2", [2, 4, 1, 1]), m.weight("b2", [2])]))
    save("external_data_weights", m, external=True)
    # Gemms and LayerNormalizations without their optional inputs at two sizes (VGG's classifier as
    # PyTorch exports it): the zeros standing for them must be of each one's size.
    m = Model(105)
    x = m.input("x", [2, 6])
    h = m.node("Gemm", [x, m.weight("w1", [5, 6])], transB=1)
    h = m.node("LayerNormalization", [h, m.weight("s1", [5])])
    h = m.node("Gemm", [h, m.weight("w2", [3, 5])], transB=1)
    m.output(m.node("LayerNormalization", [h, m.weight("s2", [3])]))
    save("gemm_layernorm_without_bias", m)
    # A DCGAN generator block: ConvTranspose, BatchNormalization, Relu, then ConvTranspose and Tanh.
    m = Model(61)
    z = m.input("z", [2, 8, 1, 1])
    y = m.node("ConvTranspose", [z, m.weight("g1_w", [8, 4, 4, 4], 0.3)])
    stats = [m.weight(f"g1_{p}", [4]) for p in ["scale", "bias", "mean"]]
    m.inits.append(numpy_helper.from_array((m.rng.random(4) + 0.5).astype(np.float32), "g1_var"))
    y = m.node("Relu", [m.node("BatchNormalization", [y] + stats + ["g1_var"])])
    y = m.node("ConvTranspose", [y, m.weight("g2_w", [4, 3, 4, 4], 0.3)], strides=[2, 2], pads=[1, 1, 1, 1])
    m.output(m.node("Tanh", [y]))
    save("dcgan_generator_block", m)


def reduce_axes_graph_input():
    """A reduction whose axes are a graph input, not a constant: the import
    is specialized on the value the caller gives."""
    m = Model(302)
    x = m.input("x", [2, 3, 4])
    axes = m.int_input("axes", [1], 3)
    m.output(m.node("ReduceSum", [x, axes], keepdims=1))
    save("reduce_axes_graph_input", m)


def quantized_conv_fixtures():
    """QLinearConv (grouped, strided, padded, with a bias and the weight's
    scale per output channel) and ConvInteger (dilated, zero points on
    both operands), between a QuantizeLinear and a DequantizeLinear or Cast
    so that the graph's input and output are float32."""
    m = Model(311)
    x = m.input("x", [1, 4, 7, 6])
    q = m.node("QuantizeLinear", [x, m.const("xs", np.float32(0.03)), m.const("xz", np.uint8(120))])
    w = m.rng.integers(-100, 100, (6, 2, 3, 3)).astype(np.int8)
    ins = [q, "xs", "xz", m.const("w", w), m.const("ws", m.rng.uniform(0.002, 0.006, 6).astype(np.float32)),
           m.const("wz", np.zeros(6, dtype=np.int8)), m.const("ys", np.float32(0.05)),
           m.const("yz", np.uint8(100)), m.const("b", m.rng.integers(-3000, 3000, 6).astype(np.int32))]
    y = m.node("QLinearConv", ins, group=2, strides=[2, 1], pads=[1, 1, 0, 1])
    m.output(m.node("DequantizeLinear", [y, "ys", "yz"]))
    save("qlinear_conv_grouped", m)
    m = Model(312)
    x = m.input("x", [2, 3, 8])
    q = m.node("QuantizeLinear", [x, m.const("xs", np.float32(0.02)), m.const("xz", np.uint8(128))])
    w = m.rng.integers(0, 255, (4, 3, 3)).astype(np.uint8)
    y = m.node("ConvInteger", [q, m.const("w", w), "xz", m.const("wz", np.uint8(131))], dilations=[2], pads=[2, 1])
    m.output(m.node("Cast", [y], to=F32))
    save("conv_integer_dilated", m)


def computed_shape_fixtures():
    """Shapes that depend on values the model computes, which the import
    reads after running the part of the model that computes them: the
    positive elements' coordinates (NonZero) and values (GatherND by them,
    Compress by a computed condition), and a Range up to their count, which
    needs the positive values' sum, computed after NonZero (a part with a
    part of its own)."""
    m = Model(313)
    x = m.input("x", [3, 5])
    positive = m.node("Greater", [x, m.const("zero", np.float32(0))])
    at = m.node("NonZero", [positive])
    m.output(m.node("Cast", [at], to=F32))
    values = m.node("GatherND", [x, m.node("Transpose", [at])])
    m.output(values)
    m.output(m.node("Compress", [x, m.node("Greater", [m.node("ReduceSum", [x, m.const("rows", np.array([1]))], keepdims=0), "zero"])], axis=0))
    total = m.node("Cast", [m.node("Ceil", [m.node("ReduceSum", [values], keepdims=0)])], to=TensorProto.INT64)
    m.output(m.node("Cast", [m.node("Range", [m.const("start", np.array(0)), total, m.const("step", np.array(2))])], to=F32))
    save("computed_shapes", m)
    # NonZero alone: its program depends on the count of positive elements only.
    m = Model(314)
    x = m.input("x", [3, 4])
    at = m.node("NonZero", [m.node("Greater", [x, m.const("zero", np.float32(0))])])
    m.output(m.node("GatherND", [x, m.node("Transpose", [at])]))
    save("nonzero_of_computed", m)


def empty_axes_graph_input():
    """A reduction whose axes input is empty (shape [0]): it reduces every
    axis. The model def does not take the empty input, but callers give it."""
    m = Model(303)
    x = m.input("x", [2, 3, 4])
    axes = m.int_input("axes", [0], 3)
    m.output(m.node("ReduceSum", [x, axes], keepdims=1))
    save("empty_axes_graph_input", m)


def nan_fixtures():
    # NaN, +inf and -inf through what tessera builds on TC's max and min.
    # Relu, Clip and Softmax: Runtime propagates NaN as TC's max and min do.
    single("nan_relu", "Relu", [[2, 3, 8]], specials=True)
    single("nan_clip", "Clip", [[4, 8]], specials=True,
           consts=[np.array(-0.5, dtype=np.float32), np.array(0.7, dtype=np.float32)])
    single("nan_softmax", "Softmax", [[6, 5]], specials=True)
    # Infinite scalars: a Clip bound, a Pad value.
    single("inf_clip_bound", "Clip", [[4, 8]], specials=True,
           consts=[np.array(0.0, dtype=np.float32), np.array(np.inf, dtype=np.float32)])
    single("inf_pad_value", "Pad", [[1, 2, 3, 3]],
           consts=[np.array([0, 0, 1, 2, 0, 0, 2, 1]), np.array(-np.inf, dtype=np.float32)])
    # Relu of a constant, folded at import, added to an input.
    m = Model(61)
    c = np.array([[np.nan, -np.inf, np.inf, -1.0], [2.0, -0.0, np.nan, 0.5]], dtype=np.float32)
    m.output(m.node("Add", [m.input("x", [2, 4]), m.node("Relu", [m.const("c", c)])]))
    save("nan_relu_folded", m)
    # Max reductions and pooling: a NaN in the window or row gives NaN
    # (numpy's outputs; Runtime's NaN depends on where it stands).
    single("nan_reduce_max_last", "ReduceMax", [[3, 4, 6]], specials=True, axes=[2],
           expect=lambda x: x.max(axis=2, keepdims=True))
    single("nan_reduce_max_middle", "ReduceMax", [[3, 4, 6]], specials=True, axes=[1], keepdims=0,
           expect=lambda x: x.max(axis=1))
    single("nan_maxpool_k3_p1", "MaxPool", [[1, 2, 8, 8]], specials=True, kernel_shape=[3, 3],
           pads=[1, 1, 1, 1], expect=lambda x: max_pool(x, (3, 3), (1, 1), (1, 1, 1, 1)))
    single("nan_maxpool_k2_s2", "MaxPool", [[1, 2, 8, 9]], specials=True, kernel_shape=[2, 2],
           strides=[2, 2], expect=lambda x: max_pool(x, (2, 2), (2, 2), (0, 0, 0, 0)))
    single("nan_global_maxpool", "GlobalMaxPool", [[2, 3, 4, 5]], specials=True,
           expect=lambda x: x.max(axis=(2, 3), keepdims=True))


def malformed():
    def write(name, model):
        onnx.save(model, os.path.join(MALFORMED, f"{name}.onnx"))

    def graph(nodes, inits=(), opset=17):
        x = helper.make_tensor_value_info("x", F32, [1, 2, 3, 3])
        y = helper.make_tensor_value_info("y", F32, None)
        g = helper.make_graph(nodes, "g", [x], [y], list(inits))
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])

    relu = helper.make_node("Relu", ["x"], ["y"], name="relu")
    # An operator set newer than the pinned onnx package's is refused
    # whole; a node whose operator's version at its set is older than the
    # importer implements is refused by name (Resize 10, whose nearest
    # mode rounds otherwise).
    write("unknown_opset", graph([relu], opset=29))
    write("old_operator_version", graph([
        helper.make_node("Resize", ["x", "scales"], ["y"], name="resize", mode="nearest"),
    ], [numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "scales")], opset=10))
    # Before operator set 7 an Add broadcasts only with `broadcast = 1`, and
    # then B must be a run of A's dimensions.
    write("legacy_broadcast_mismatch", graph([
        helper.make_node("Add", ["x", "b"], ["y"], name="add", broadcast=1, axis=0),
    ], [numpy_helper.from_array(np.ones([3], dtype=np.float32), "b")], opset=6))
    write("cycle", graph([
        helper.make_node("Add", ["x", "b"], ["a"], name="first"),
        helper.make_node("Relu", ["a"], ["b"], name="second"),
        helper.make_node("Relu", ["a"], ["y"], name="third"),
    ]))
    write("missing_initializer", graph([helper.make_node("Conv", ["x", "weights"], ["y"], name="conv")]))
    write("unsupported_operator", graph([helper.make_node("Scan", ["x"], ["y"], name="scan")]))
    # The same with a symbolic batch: refused before any size is known.
    symbolic = graph([helper.make_node("Scan", ["x"], ["y"], name="scan")])
    symbolic.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    write("symbolic_unsupported_operator", symbolic)
    w = numpy_helper.from_array(np.ones([2, 2, 3, 3], dtype=np.float32), "w")
    write("unsupported_attribute_value", graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", auto_pad="SOMETIMES")], [w]))
    write("unknown_attribute", graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu", alpha=0.5)]))
    bad = numpy_helper.from_array(np.ones([2, 3], dtype=np.float32), "w")
    write("shape_mismatch", graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [bad]))
    ints = numpy_helper.from_array(np.ones([1, 2, 3, 3], dtype=np.int64), "k")
    write("type_mismatch", graph([helper.make_node("Add", ["x", "k"], ["y"], name="add")], [ints]))
    less = helper.make_node("Less", ["x", "k"], ["c"], name="less")
    write("comparison_type_mismatch", graph([less, helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)],
                                            [ints]))
    external = numpy_helper.from_array(np.ones([2, 2, 1, 1], dtype=np.float32), "w")
    external.data_location = TensorProto.EXTERNAL
    external.ClearField("raw_data")
    for key, value in [("location", "missing.bin"), ("offset", "0"), ("length", "16")]:
        entry = external.external_data.add()
        entry.key, entry.value = key, value
    write("external_data_missing", graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")], [external]))
    write("ceil_mode_include_pad", graph([helper.make_node("AveragePool", ["x"], ["y"], name="pool",
                                                           kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1,
                                                           count_include_pad=1)]))
    # Two nodes the import refuses for what their inputs are (a rank-9
    # transpose, a reflecting pad as long as its axis), whose operator types
    # are supported, and a node reading both, which is not tried: `info`
    # lists the two.
    x9 = helper.make_tensor_value_info("x9", F32, [1] * 8 + [2])
    two = helper.make_graph([
        helper.make_node("Transpose", ["x9"], ["t"], name="transpose"),
        helper.make_node("Pad", ["x", "pads"], ["p"], name="pad", mode="reflect"),
        helper.make_node("Add", ["t", "p"], ["y"], name="after"),
    ], "g", [x9, helper.make_tensor_value_info("x", F32, [1, 2, 3, 3])],
        [helper.make_tensor_value_info("y", F32, None)],
        [numpy_helper.from_array(np.array([0, 0, 3, 1, 0, 0, 1, 1], dtype=np.int64), "pads")])
    write("two_refused_nodes", helper.make_model(two, opset_imports=[helper.make_opsetid("", 17)]))


def main():
    # The PyTorch-exported fixtures (torch_*) belong to make_torch_fixtures.py.
    os.makedirs(FIXTURES, exist_ok=True)
    for name in os.listdir(FIXTURES):
        if not name.startswith("torch_"):
            shutil.rmtree(os.path.join(FIXTURES, name))
    shutil.rmtree(MALFORMED, ignore_errors=True)
    os.makedirs(MALFORMED)
    fixtures()
    malformed()
    print(f"wrote {len(os.listdir(FIXTURES))} fixtures and {len(os.listdir(MALFORMED))} malformed models")


if __name__ == "__main__":
    sys.exit(main())
