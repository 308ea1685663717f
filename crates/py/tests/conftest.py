"""Shared helpers of the Python package's tests: where the repository's
fixtures are, and the one comparison every result goes through."""

import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "onnx" / "fixtures"
MALFORMED = ROOT / "tests" / "onnx" / "malformed"


def fixture_dirs():
    return sorted(p for p in FIXTURES.iterdir() if (p / "model.onnx").exists())


def fixture_feed(d):
    return {p.stem: np.load(p) for p in sorted((d / "inputs").glob("*.npy"))}


def assert_close(got, want, what=""):
    """Equal shapes and element types, and values within 1e-4 (relative to
    the larger magnitude, absolute below 1), NaNs where the reference has
    them: the tolerance the Rust fixture test uses."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, want {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, want {want.dtype}"
    if got.dtype == np.bool_ or np.issubdtype(got.dtype, np.integer):
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, equal_nan=True, err_msg=what)


@pytest.fixture
def mm_source():
    return "def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(i,j) +=! A(i,k) * B(k,j)\n}\n"
