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


def test_large_non_linear_defs_are_compared_at_sampled_points():
    relu = "def f(float(N) X) -> (Y) { Y(i) = fmax(X(i), 0.0) }"
    fused = "def f(float(N) X) -> (Y) { Y(i) max=! r == 0 ? X(i) : 0.0 where r in 0:2 }"
    wrong = "def f(float(N) X) -> (Y) { Y(i) max=! r == 0 ? X(i) : 0.5 where r in 0:2 }"
    # Two million elements and more: too many to interpret whole.
    sizes = {"N": 1 << 21}
    v = tessera.verify(relu, fused, "f", sizes)
    assert v and v.method == "sampled" and v.error_bound is None
    w = tessera.verify(relu, wrong, "f", sizes)
    assert not w and w.method == "sampled"


def test_bad_requests_raise():
    import pytest

    with pytest.raises(tessera.InputError, match="both sides"):
        tessera.verify(A, None, "f", {"N": 4})
    with pytest.raises(tessera.InputError, match="has no def `nope`"):
        tessera.verify(A, B, "nope", {"N": 4})
    with pytest.raises(tessera.ParseError):
        tessera.verify("def f(", B, "f", {"N": 4})
    with pytest.raises(tessera.InputError, match="at least 1"):
        tessera.verify(A, B, "f", {"N": 4}, trials=0)
