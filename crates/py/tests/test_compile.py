"""tessera.compile: TC defs as functions, against NumPy."""

import numpy as np
import pytest

import tessera


def test_matmul_by_position_and_by_name(mm_source):
    mm = tessera.compile(mm_source)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 7), dtype=np.float32)
    b = rng.standard_normal((7, 3), dtype=np.float32)
    np.testing.assert_allclose(mm(a, b), a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mm(B=b, A=a), a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mm(a, B=b), a @ b, rtol=1e-5, atol=1e-5)
    assert (mm.entry, mm.inputs, mm.outputs) == ("mm", ["A", "B"], ["C"])


def test_specialized_and_cached_per_shape(mm_source):
    mm = tessera.compile(mm_source)
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    mm(a, b)
    mm(a + 1, b)
    assert mm.specializations == 1
    c = mm(np.ones((6, 3), np.float32), b)
    assert c.shape == (6, 4) and mm.specializations == 2
    np.testing.assert_array_equal(c, np.full((6, 4), 3, np.float32))


def test_entry_picks_a_def_and_several_outputs_are_a_tuple():
    src = """
def unused(float(N) A) -> (B) { B(i) = A(i) }
def stats(float(M,N) A, float s) -> (Sum, Scaled) {
  Sum(m) +=! A(m,n)
  Scaled(m,n) = A(m,n) * s
}
"""
    f = tessera.compile(src, entry="stats")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    total, scaled = f(a, 0.5)
    np.testing.assert_allclose(total, [3.0, 12.0])
    np.testing.assert_allclose(scaled, a * 0.5)
    with pytest.raises(tessera.InputError, match="has several defs"):
        tessera.compile(src)


def test_sizes_are_fixed_for_every_call():
    f = tessera.compile("def f(float(N) A) -> (B) { B(i) = A(i) + 1.0 }", sizes={"N": 4})
    np.testing.assert_array_equal(f(np.zeros(4, np.float32)), np.ones(4, np.float32))
    with pytest.raises(tessera.ShapeError):
        f(np.zeros(5, np.float32))


def test_source_from_a_path(tmp_path):
    p = tmp_path / "twice.tc"
    p.write_text("def twice(int64(N) A) -> (B) { B(i) = A(i) * 2 }\n")
    f = tessera.compile(p)
    np.testing.assert_array_equal(f(np.arange(4)), np.arange(4) * 2)


def test_the_quickstart_layer_matches_numpy():
    import pathlib

    ex = pathlib.Path(__file__).resolve().parents[3] / "examples" / "quickstart"
    layer = tessera.compile(ex / "layer.tc", entry="layer")
    i, w, b = (np.load(ex / f"{n}.npy") for n in ("I", "Wt", "B"))
    got = layer(i, w, b)
    # The layer: a padded 3x3 convolution, bias, ReLU and 2x2 max pooling.
    n, c, h, wd = i.shape
    f = w.shape[0]
    padded = np.pad(i, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((n, f, h, wd), np.float64)
    for dy in range(3):
        for dx in range(3):
            conv += np.einsum("nchw,fc->nfhw", padded[:, :, dy:dy + h, dx:dx + wd], w[:, :, dy, dx])
    act = np.maximum(conv + b[None, :, None, None], 0)
    pooled = act.reshape(n, f, h // 2, 2, wd // 2, 2).max(axis=(3, 5))
    assert got.shape == pooled.shape
    np.testing.assert_allclose(got, pooled, rtol=1e-4, atol=1e-4)


CONV = """
def conv(float(N,C,H,W) I, float(F,C,3,3) Wt, float(F) B) -> (O) {
  Z(n,f,h,w) +=! I(n,c,h+kh-1,w+kw-1) * Wt(f,c,kh,kw) where h in 0:H, w in 0:W
  O(n,f,h,w) = fmax(Z(n,f,h,w) + B(f), 0.0)
}
"""


def conv_reference(x, wt, b):
    """3x3 convolution, padding 1, bias and ReLU, in NumPy."""
    n, _, h, w = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, wt.shape[0], h, w), np.float64)
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,fc->nfhw", padded[:, :, i:i + h, j:j + w], wt[:, :, i, j])
    return np.maximum(out + b[None, :, None, None], 0.0)


def test_constant_weights_are_left_out_of_calls_and_copied():
    rng = np.random.default_rng(3)
    wt = rng.standard_normal((32, 32, 3, 3), dtype=np.float32) / 10
    b = rng.standard_normal(32, dtype=np.float32)
    f = tessera.compile(CONV, constants={"Wt": wt, "B": b})
    assert f.inputs == ["I"]
    x = rng.standard_normal((2, 32, 6, 5), dtype=np.float32)
    expected = conv_reference(x, wt, b)
    np.testing.assert_allclose(f(x), expected, rtol=1e-4, atol=1e-4)
    # The constants were copied when compiled: changing the caller's array
    # changes nothing, in this specialization or a new one.
    original = wt.copy()
    wt[:] = 0
    np.testing.assert_allclose(f(x), expected, rtol=1e-4, atol=1e-4)
    x2 = rng.standard_normal((1, 32, 4, 4), dtype=np.float32)
    np.testing.assert_allclose(f(I=x2), conv_reference(x2, original, b), rtol=1e-4, atol=1e-4)
    assert f.specializations == 2
    with pytest.raises(tessera.InputError, match="declared constant"):
        f(x, Wt=wt)


def test_constant_the_def_does_not_take_is_an_input_error():
    with pytest.raises(tessera.InputError, match="no parameter `V`"):
        tessera.compile(CONV, constants={"V": np.zeros(3, np.float32)})
    with pytest.raises(tessera.ShapeError, match="rank"):
        tessera.compile(CONV, constants={"B": np.zeros((2, 2), np.float32)})
