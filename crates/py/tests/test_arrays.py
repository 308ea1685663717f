"""Arrays in and out: zero-copy inputs (NumPy, DLPack), one copy for the
others, outputs that own tessera's buffers."""

import numpy as np
import pytest

import tessera
from conftest import FIXTURES, fixture_feed

COPY = "def copy(float(N) A) -> (B) { B(i) = A(i) }"


def test_aligned_contiguous_arrays_are_not_copied():
    f = tessera.compile(COPY)
    a = np.arange(1024, dtype=np.float32)
    assert a.ctypes.data % 16 == 0 and a.flags.c_contiguous
    before = tessera.input_copies()
    out = f(a)
    assert tessera.input_copies() == before
    np.testing.assert_array_equal(out, a)
    # The output is tessera's buffer, not the input's.
    assert out.ctypes.data != a.ctypes.data


def test_the_session_reads_inputs_in_place():
    d = FIXTURES / "resnet_basic_block"
    session = tessera.InferenceSession(d / "model.onnx")
    feed = {k: np.ascontiguousarray(v) for k, v in fixture_feed(d).items()}
    before = tessera.input_copies()
    session.run(None, feed)
    assert tessera.input_copies() == before


def test_non_contiguous_and_misaligned_arrays_are_copied_once():
    f = tessera.compile(COPY)
    base = np.arange(64, dtype=np.float32)
    strided = base[::2]
    before = tessera.input_copies()
    np.testing.assert_array_equal(f(strided), strided)
    assert tessera.input_copies() == before + 1
    # A view starting one element in: contiguous but 4 bytes off alignment.
    shifted = base[1:33]
    assert shifted.ctypes.data % 16 != 0
    np.testing.assert_array_equal(f(shifted), shifted)
    assert tessera.input_copies() == before + 2


def test_a_list_is_converted_once_and_typed_as_numpy_types_it():
    ints = tessera.compile("def copy(int64(N) A) -> (B) { B(i) = A(i) }")
    before = tessera.input_copies()
    np.testing.assert_array_equal(ints([1, 2, 3]), [1, 2, 3])
    assert tessera.input_copies() == before + 1
    # NumPy makes a list of floats float64, which a float32 def refuses.
    with pytest.raises(tessera.InputError, match="float64"):
        tessera.compile(COPY)([1.0, 2.0])


def test_dlpack_objects_are_read_in_place():
    f = tessera.compile(COPY)
    a = np.arange(32, dtype=np.float32)

    class OnlyDLPack:
        """An array library's tensor that offers nothing but DLPack."""

        def __init__(self, x):
            self.x = x

        def __dlpack__(self, **kwargs):
            return self.x.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.x.__dlpack_device__()

    before = tessera.input_copies()
    np.testing.assert_array_equal(f(OnlyDLPack(a)), a)
    assert tessera.input_copies() == before


def test_pytorch_tensors_are_read_in_place():
    torch = pytest.importorskip("torch")
    f = tessera.compile(COPY)
    t = torch.arange(32, dtype=torch.float32)
    before = tessera.input_copies()
    np.testing.assert_array_equal(f(t), t.numpy())
    assert tessera.input_copies() == before


def test_outputs_own_their_memory_and_later_runs_do_not_touch_them():
    f = tessera.compile(COPY)
    first = f(np.ones(8, np.float32))
    keep = first.copy()
    second = f(np.full(8, 2, np.float32))
    np.testing.assert_array_equal(first, keep)
    np.testing.assert_array_equal(second, np.full(8, 2, np.float32))
    assert first.base is not None and not first.flags.owndata
    # Writing an output changes only that output.
    first[:] = 7
    third = f(np.full(8, 3, np.float32))
    np.testing.assert_array_equal(third, np.full(8, 3, np.float32))
    np.testing.assert_array_equal(second, np.full(8, 2, np.float32))


def test_every_element_type_round_trips():
    for dt in ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]:
        src = f"def copy({dt}(N) A) -> (B) {{ B(i) = A(i) }}"
        a = (np.arange(10) % 7).astype(dt)
        out = tessera.compile(src)(a)
        assert out.dtype == a.dtype
        np.testing.assert_array_equal(out, a)
    mask = np.array([True, False, True])
    out = tessera.compile("def neg(bool(N) A) -> (B) { B(i) = !A(i) }")(mask)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, ~mask)


def test_narrow_floats_compute_and_round_in_their_type():
    # float16 is NumPy's; bfloat16 is ml_dtypes'. Each computes as NumPy
    # computes it, rounding every result to the type: 65504 * 2 overflows
    # float16, 256 + 1 ties to 256 in bfloat16.
    import ml_dtypes

    h = np.array([1, 0.5, 65504, -2, 3.14159], dtype=np.float16)
    twice = tessera.compile("def twice(float16(N) A) -> (float16(N) B) { B(i) = A(i) * float16(2.0) }")
    with np.errstate(over="ignore"):
        want = h * np.float16(2)
    out = twice(h)
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, want)
    b = np.array([1.5, 3, -0.25, 256, 0.1], dtype=ml_dtypes.bfloat16)
    plus = tessera.compile("def plus(bfloat16(N) A) -> (bfloat16(N) B) { B(i) = A(i) + bfloat16(1.0) }")
    out = plus(b)
    assert out.dtype == ml_dtypes.bfloat16
    want = b + ml_dtypes.bfloat16(1)
    np.testing.assert_array_equal(out.astype(np.float32), want.astype(np.float32))


def test_two_and_four_bit_integers_wrap_to_their_width():
    # ml_dtypes' int4 arrays hold codes; tessera takes and gives values.
    # -(-8) is 8, one past int4's largest value: it wraps to -8.
    import ml_dtypes

    a = np.array([-8, -1, 0, 7], dtype=ml_dtypes.int4)
    out = tessera.compile("def neg(int4(N) A) -> (int4(N) B) { B(i) = -A(i) }")(a)
    assert out.dtype == ml_dtypes.int4
    np.testing.assert_array_equal(out.astype(np.int8), np.array([-8, 1, 0, -7], dtype=np.int8))
    u = np.array([0, 1, 2, 3], dtype=ml_dtypes.uint2)
    out = tessera.compile("def inc(uint2(N) A) -> (uint2(N) B) { B(i) = A(i) + uint2(1) }")(u)
    np.testing.assert_array_equal(out.astype(np.uint8), np.array([1, 2, 3, 0], dtype=np.uint8))
