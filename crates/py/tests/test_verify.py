"""tessera.verify: verdicts and differing regions."""

import numpy as np

import tessera

A = "def f(float(N) X) -> (Y) { Y(i) = X(i) * 2.0 }"
B = "def f(float(N) X) -> (Y) { Y(i) = X(i) + X(i) }"
# Differs from A only at index 0.
C = "def f(float(N) X) -> (Y) { Y(i) = i >= 1 ? X(i) * 2.0 : 0.0 }"


def test_equivalent_defs():
    v = tessera.verify(A, B, "f", {"N": 8})
    assert v and v.equivalent and v.regions == []
    assert v.method == "exact" and v.error_bound is not None and v.error_bound < 2**-60
    assert str(v).startswith("equivalent")


def test_differing_regions():
    v = tessera.verify(A, C, "f", {"N": 8})
    assert not v
    assert [(r.output, r.ranges) for r in v.regions] == [("Y", [(0, 1)])]
    y = np.arange(8)
    assert list(y[v.regions[0].index]) == [0]


def test_two_defs_of_one_source():
    src = A + "\n" + B.replace("def f", "def g")
    assert tessera.verify(src, None, "f", {"N": 4}, entry_b="g")


def test_bad_requests_raise():
    import pytest

    with pytest.raises(tessera.InputError, match="both sides"):
        tessera.verify(A, None, "f", {"N": 4})
    with pytest.raises(tessera.InputError, match="has no def `nope`"):
        tessera.verify(A, B, "nope", {"N": 4})
    with pytest.raises(tessera.ParseError):
        tessera.verify("def f(", B, "f", {"N": 4})
