"""Bad input raises the right exception with the located message the CLI
prints, never a crash."""

import numpy as np
import onnxruntime as ort
import pytest

import tessera
from conftest import FIXTURES, MALFORMED, fixture_feed

MODEL = FIXTURES / "resnet_basic_block" / "model.onnx"


@pytest.fixture(scope="module")
def session():
    return tessera.InferenceSession(MODEL)


def good_feed():
    return fixture_feed(MODEL.parent)


def test_the_exception_classes_form_one_family():
    for cls in [tessera.ParseError, tessera.UnsupportedOperatorError, tessera.InputError, tessera.RunError]:
        assert issubclass(cls, tessera.Error)
    assert issubclass(tessera.ShapeError, tessera.InputError)


def test_wrong_dtype(session):
    feed = {k: v.astype(np.float64) for k, v in good_feed().items()}
    with pytest.raises(tessera.InputError, match=r"input `x` is float64.*tensor\(float\)") as e:
        session.run(None, feed)
    assert not isinstance(e.value, tessera.ShapeError)


def test_wrong_rank_and_wrong_dimension(session):
    x = good_feed()["x"]
    with pytest.raises(tessera.ShapeError, match="input `x` has shape .*rank 3"):
        session.run(None, {"x": x[0]})
    with pytest.raises(tessera.ShapeError, match="dimension 1 must be 4"):
        session.run(None, {"x": np.concatenate([x, x], axis=1)})


def test_missing_and_unknown_inputs(session):
    with pytest.raises(tessera.InputError, match="input `x` is not given"):
        session.run(None, {})
    with pytest.raises(tessera.InputError, match=r"(?s)no input `y`.*its inputs are `x`"):
        session.run(None, {**good_feed(), "y": np.zeros(1, np.float32)})


def test_unknown_output_name(session):
    with pytest.raises(tessera.InputError, match="no output `nope`"):
        session.run(["nope"], good_feed())


def test_not_an_array(session):
    with pytest.raises(tessera.InputError, match="input `x`"):
        session.run(None, {"x": object()})
    with pytest.raises(tessera.InputError, match="element type"):
        session.run(None, {"x": np.zeros((1, 4, 8, 8), np.complex64)})
    # float16 is a type tessera takes, but not the model's.
    with pytest.raises(tessera.InputError, match="is float16 .* declares tensor\\(float\\)"):
        session.run(None, {"x": np.zeros((1, 4, 8, 8), np.float16)})


def test_non_contiguous_input_is_copied_not_refused(session):
    x = good_feed()["x"]
    transposed_twice = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    assert not transposed_twice.flags.c_contiguous
    got = session.run(None, {"x": transposed_twice})[0]
    want = session.run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, want)


def test_model_files_that_cannot_be_used(tmp_path):
    with pytest.raises(tessera.Error, match="cannot read"):
        tessera.InferenceSession(tmp_path / "missing.onnx")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x08\x07garbage")
    with pytest.raises(tessera.ParseError, match="not a valid ONNX model"):
        tessera.InferenceSession(junk)
    with pytest.raises(tessera.UnsupportedOperatorError, match="operator `Scan` is not supported"):
        tessera.InferenceSession(MALFORMED / "unsupported_operator.onnx")
    # A symbolic batch defers compiling to the first run, not the check.
    with pytest.raises(tessera.UnsupportedOperatorError, match="operator `Scan` is not supported"):
        tessera.InferenceSession(MALFORMED / "symbolic_unsupported_operator.onnx")
    with pytest.raises(tessera.UnsupportedOperatorError, match="operator set version 29; tessera reads versions 1 to 28"):
        tessera.InferenceSession(MALFORMED / "unknown_opset.onnx")


def test_a_file_object_and_a_closed_file(tmp_path):
    with open(MODEL, "rb") as f:
        with pytest.raises(tessera.InputError, match="file object; pass the model's path"):
            tessera.InferenceSession(f)
    with pytest.raises(tessera.InputError, match="closed file object"):
        tessera.InferenceSession(f)
    with pytest.raises(tessera.InputError, match="by its path"):
        tessera.InferenceSession(42)


def test_providers_other_than_the_cpu_are_refused():
    tessera.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    with pytest.raises(tessera.InputError, match="CUDAExecutionProvider"):
        tessera.InferenceSession(MODEL, providers=["CUDAExecutionProvider"])


def test_bad_sizes_and_threads():
    with pytest.raises(tessera.ShapeError, match="no symbolic input dimension `batch`"):
        tessera.InferenceSession(MODEL, sizes={"batch": 2})
    with pytest.raises(tessera.ShapeError, match="positive"):
        tessera.compile("def f(float(N) A) -> (B) { B(i) = A(i) }", sizes={"N": 0})
    dynamic = FIXTURES / "torch_legacy_infogan_dynamic" / "model.onnx"
    with pytest.raises(tessera.ShapeError, match="size `batch` is 0; sizes must be positive"):
        tessera.InferenceSession(dynamic, sizes={"batch": 0})
    with pytest.raises(tessera.ShapeError, match="positive"):
        tessera.verify("def f(float(N) A) -> (B) { B(i) = A(i) }", None, "f", {"N": -1}, entry_b="f")
    with pytest.raises(tessera.InputError, match="threads"):
        tessera.InferenceSession(MODEL, threads=0)
    with pytest.raises(tessera.InputError, match="`threads` must be a positive int, not -1"):
        tessera.InferenceSession(MODEL, threads=-1)
    with pytest.raises(tessera.InputError, match="`sizes` must map symbolic dimension names to ints"):
        tessera.InferenceSession(MODEL, sizes=[("batch", 1)])


def test_onnx_runtime_options_tessera_cannot_honour():
    options = ort.SessionOptions()
    options.intra_op_num_threads = -2
    with pytest.raises(tessera.InputError, match="intra_op_num_threads` is -2"):
        tessera.InferenceSession(MODEL, options)
    with pytest.raises(tessera.InputError, match="given twice"):
        tessera.InferenceSession(MODEL, ort.SessionOptions(), sess_options=ort.SessionOptions())
    with pytest.raises(tessera.InputError, match="CPU provider takes none"):
        tessera.InferenceSession(MODEL, providers=["CPUExecutionProvider"],
                                 provider_options=[{"arena_extend_strategy": "kSameAsRequested"}])


def test_tc_source_errors_are_located():
    with pytest.raises(tessera.ParseError) as e:
        tessera.compile("def f(float(N) A) -> (B) {\n  B(i) = A(i) +\n}\n")
    assert "expected an expression" in str(e.value) and "--> <string>:3:1" in str(e.value)


def test_bad_function_arguments(mm_source):
    mm = tessera.compile(mm_source)
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    with pytest.raises(tessera.InputError, match="called without `B`"):
        mm(a)
    with pytest.raises(tessera.InputError, match="no parameter `Z`"):
        mm(a, b, Z=a)
    with pytest.raises(tessera.InputError, match="given twice"):
        mm(a, b, A=a)
    with pytest.raises(tessera.InputError, match="takes 2 arguments"):
        mm(a, b, a)
    with pytest.raises(tessera.ShapeError, match="rank 2"):
        mm(np.ones(3, np.float32), b)
    with pytest.raises(tessera.ShapeError):
        mm(a, np.ones((5, 4), np.float32))
    with pytest.raises(tessera.InputError, match="float64"):
        mm(a.astype(np.float64), b)


def test_a_run_error_names_its_statement():
    gather = tessera.compile("def g(float(N) T, int64(M) I) -> (O) { O(i) = T(I(i)) where i in 0:M }")
    with pytest.raises(tessera.RunError, match="out of bounds"):
        gather(np.ones(4, np.float32), np.array([0, 9]))
