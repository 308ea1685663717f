"""Writes the hostile models of tessera's tests (tests/onnx/hostile/).

- output_names.onnx: outputs named like paths (`../../escaped`, an
  absolute path, `a/b`) beside a plain one; `run --out DIR` must write
  every output inside DIR.
- external_weights.onnx: an initializer `w` stored in the external file
  `weights.bin` (no offset or length: the whole file), which the tests
  make a link out of the folder, a FIFO, a huge sparse file or a proper
  file of 8 bytes.
- gather.onnx: `Gather` of a float32 [3] by int64 indices [2]; the tests
  give an index out of range, which must be reported at the node.
- negative_initializer.onnx: an initializer of dims [-2, 3], which `info`
  and `run` must refuse by name rather than count or allocate.
- pool_kernel_zero.onnx, zero_dimension.onnx, symbolic.onnx: models a
  user error is found in (a pooling window of size 0, an input dimension
  of 0, a symbolic dimension `N` the tests give a wrong `--size` for),
  which must be reported as such, not as internal errors.

Run with the packages of tests/onnx/requirements.txt (scripts/onnx-fixtures.sh
installs them).
"""

import os

import onnx
from onnx import TensorProto, helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hostile")
F32 = TensorProto.FLOAT


def output_names():
    x = helper.make_tensor_value_info("x", F32, [2])
    names = ["../../escaped", "/tmp/tessera_absolute_escaped", "a/b", "y"]
    nodes = [helper.make_node("Relu", ["x"], [n], name=f"relu{k}") for k, n in enumerate(names)]
    outs = [helper.make_tensor_value_info(n, F32, [2]) for n in names]
    graph = helper.make_graph(nodes, "output_names", [x], outs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def external_weights():
    x = helper.make_tensor_value_info("x", F32, [2])
    y = helper.make_tensor_value_info("y", F32, [2])
    w = TensorProto()
    w.name = "w"
    w.data_type = F32
    w.dims.extend([2])
    w.data_location = TensorProto.EXTERNAL
    entry = w.external_data.add()
    entry.key = "location"
    entry.value = "weights.bin"
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    graph = helper.make_graph([node], "external_weights", [x], [y], initializer=[w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def negative_initializer():
    x = helper.make_tensor_value_info("x", F32, [3])
    y = helper.make_tensor_value_info("y", F32, [3])
    w = TensorProto()
    w.name = "w"
    w.data_type = F32
    w.dims.extend([-2, 3])
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    graph = helper.make_graph([node], "negative_initializer", [x], [y], initializer=[w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def gather():
    x = helper.make_tensor_value_info("x", F32, [3])
    i = helper.make_tensor_value_info("i", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("y", F32, [2])
    node = helper.make_node("Gather", ["x", "i"], ["y"], name="gather")
    graph = helper.make_graph([node], "gather", [x, i], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def one_node(name, node, shape):
    x = helper.make_tensor_value_info("x", F32, shape)
    y = helper.make_tensor_value_info("y", F32, None)
    graph = helper.make_graph([node], name, [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main():
    os.makedirs(HERE, exist_ok=True)
    models = [
        ("output_names", output_names()),
        ("external_weights", external_weights()),
        (
            "pool_kernel_zero",
            one_node(
                "pool_kernel_zero",
                helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[0, 0]),
                [1, 1, 4, 4],
            ),
        ),
        ("zero_dimension", one_node("zero_dimension", helper.make_node("Relu", ["x"], ["y"], name="relu"), [0, 3])),
        ("gather", gather()),
        ("negative_initializer", negative_initializer()),
        ("symbolic", one_node("symbolic", helper.make_node("Relu", ["x"], ["y"], name="relu"), ["N"])),
    ]
    for name, model in models:
        # Written as bytes: onnx.save would look for the external file.
        with open(os.path.join(HERE, f"{name}.onnx"), "wb") as f:
            f.write(model.SerializeToString())


if __name__ == "__main__":
    main()
