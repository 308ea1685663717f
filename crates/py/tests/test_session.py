"""tessera.InferenceSession against ONNX Runtime: every shipped fixture,
ONNX Runtime's interface habits, and caching per set of input shapes."""

import numpy as np
import onnxruntime as ort
import pytest

import tessera
from conftest import FIXTURES, assert_close, fixture_dirs, fixture_feed


@pytest.mark.parametrize("d", fixture_dirs(), ids=lambda d: d.name)
def test_every_fixture_matches_onnx_runtime(d):
    feed = fixture_feed(d)
    session = tessera.InferenceSession(d / "model.onnx")
    names = [o.name for o in session.get_outputs()]
    got = session.run(None, feed)
    assert len(got) == len(names)
    # The reference outputs ONNX Runtime wrote when the fixture was made...
    for name, g in zip(names, got):
        assert_close(g, np.load(d / "outputs" / f"{name}.npy"), f"{d.name}: {name}")
    # ...and ONNX Runtime run now, on the same feed. Where a NaN reaches a
    # max over a window or row, Runtime's result depends on where the NaN
    # stands (tests/onnx/make_fixtures.py); those elements are compared
    # with the stored reference above, which propagates the NaN.
    live = ort.InferenceSession(str(d / "model.onnx"), providers=["CPUExecutionProvider"])
    for name, g, w in zip(names, got, live.run(None, feed)):
        if d.name.startswith("nan_") and np.issubdtype(g.dtype, np.floating):
            keep = ~np.isnan(g)
            g, w = g[keep], w[keep]
        assert_close(g, w, f"{d.name}: {name} (live)")


def test_inputs_and_outputs_are_described_as_onnx_runtime_does():
    path = str(FIXTURES / "bert_layer_2_heads" / "model.onnx")
    ours = tessera.InferenceSession(path)
    theirs = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for a, b in [(ours.get_inputs(), theirs.get_inputs()), (ours.get_outputs(), theirs.get_outputs())]:
        assert [(x.name, x.type, x.shape) for x in a] == [(x.name, x.type, x.shape) for x in b]
    assert ours.get_providers() == ["CPUExecutionProvider"]


def test_outputs_are_chosen_and_ordered_by_name():
    d = FIXTURES / "split_three"
    session = tessera.InferenceSession(d / "model.onnx")
    names = [o.name for o in session.get_outputs()]
    assert len(names) > 1
    feed = fixture_feed(d)
    everything = session.run(None, feed)
    backwards = session.run(list(reversed(names)), feed)
    for a, b in zip(everything, reversed(backwards)):
        np.testing.assert_array_equal(a, b)
    only_last = session.run([names[-1]], feed)
    assert len(only_last) == 1
    np.testing.assert_array_equal(only_last[0], everything[-1])


def symbolic_model():
    """A fixture whose inputs have a symbolic dimension."""
    for d in fixture_dirs():
        s = tessera.InferenceSession(d / "model.onnx")
        if any(isinstance(dim, str) for i in s.get_inputs() for dim in (i.shape or [])):
            return d, s
    pytest.fail("no fixture has a symbolic input dimension")


def test_a_model_is_compiled_once_per_set_of_input_shapes():
    d = FIXTURES / "torch_legacy_infogan_dynamic"
    session = tessera.InferenceSession(d / "model.onnx")
    assert session.specializations == 0
    feed = fixture_feed(d)
    first = session.run(None, feed)
    assert session.specializations == 1
    session.run(None, feed)
    assert session.specializations == 1
    # Another value of the symbolic dimension: one more compilation, and
    # results that still match ONNX Runtime's.
    inp = session.get_inputs()[0]
    axis = next(k for k, dim in enumerate(inp.shape) if isinstance(dim, str))
    bigger = dict(feed)
    bigger[inp.name] = np.concatenate([feed[inp.name]] * 2, axis=axis)
    got = session.run(None, bigger)
    assert session.specializations == 2
    live = ort.InferenceSession(str(d / "model.onnx"), providers=["CPUExecutionProvider"])
    for g, w in zip(got, live.run(None, bigger)):
        assert_close(g, w, d.name)
    assert len(first) == len(session.get_outputs())


def test_sizes_bind_symbolic_dimensions_and_compile_at_once():
    d, _ = symbolic_model()
    feed = fixture_feed(d)
    inp = tessera.InferenceSession(d / "model.onnx").get_inputs()
    sizes = {}
    for i in inp:
        for dim, n in zip(i.shape, feed[i.name].shape):
            if isinstance(dim, str):
                sizes[dim] = n
    session = tessera.InferenceSession(d / "model.onnx", sizes=sizes)
    assert session.specializations == 1
    session.run(None, feed)
    assert session.specializations == 1


def test_threads_option_gives_the_same_results():
    d = FIXTURES / "resnet_basic_block"
    feed = fixture_feed(d)
    one = tessera.InferenceSession(d / "model.onnx", threads=1).run(None, feed)
    two = tessera.InferenceSession(d / "model.onnx", threads=2).run(None, feed)
    for a, b in zip(one, two):
        assert_close(a, b)


def test_a_script_written_for_onnx_runtime_runs_unchanged():
    # ONNX Runtime's own constructor forms, with `tessera` for `ort`:
    # session options and providers positionally or by keyword.
    d = FIXTURES / "resnet_basic_block"
    path = str(d / "model.onnx")
    feed = fixture_feed(d)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    want = ort.InferenceSession(path, options, ["CPUExecutionProvider"]).run(None, feed)
    for session in [
        tessera.InferenceSession(path, options, ["CPUExecutionProvider"]),
        tessera.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"],
                                 provider_options=[{}]),
    ]:
        assert session.threads == 1
        for g, w in zip(session.run(None, feed), want):
            assert_close(g, w)
    options.intra_op_num_threads = 0
    assert tessera.InferenceSession(path, options).threads is None
    assert tessera.InferenceSession(path, options, threads=2).threads == 2


def test_an_input_taken_as_a_constant_compiles_once_per_value():
    # The axes of this ReduceSum are a graph input: the session's program
    # is specialized on their value, as on the input shapes.
    d = FIXTURES / "reduce_axes_graph_input"
    session = tessera.InferenceSession(d / "model.onnx")
    assert session.specializations == 0
    x = np.load(d / "inputs" / "x.npy")
    for axis in [0, 2, 0, 1]:
        [got] = session.run(None, {"x": x, "axes": np.array([axis], dtype=np.int64)})
        assert_close(got, x.sum(axis=axis, keepdims=True), f"axis {axis}")
    assert session.specializations == 3


def test_a_shape_computed_by_the_model_compiles_once_per_shape():
    # NonZero of a tensor the model computes: the part of the model before
    # it runs first, and the program after it is specialized on the number
    # of positive elements, not on their values or places.
    d = FIXTURES / "nonzero_of_computed"
    session = tessera.InferenceSession(d / "model.onnx")
    live = ort.InferenceSession(str(d / "model.onnx"), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(5)
    for count, specializations in [(5, 1), (5, 1), (7, 2), (5, 2)]:
        x = -np.abs(rng.standard_normal((3, 4))).astype(np.float32)
        x.flat[rng.choice(12, count, replace=False)] += 5
        [got] = session.run(None, {"x": x})
        assert got.shape == (count,)
        assert_close(got, live.run(None, {"x": x})[0], f"{count} positive")
        assert session.specializations == specializations
    with pytest.raises(tessera.RunError, match=r"node `.*` \(NonZero\): no element is nonzero"):
        session.run(None, {"x": -np.ones((3, 4), dtype=np.float32)})
