"""tessera.optimize and InferenceSession(..., optimize=True): the optimized
program computes what the original does, the steps say what changed, an
identical request is answered from the cache, and bad options raise."""

import numpy as np
import pytest

import tessera
from conftest import FIXTURES, assert_close, fixture_feed

# A matrix chain whose last factor is narrow: (A B) C costs about 2 M K N
# operations, A (B C) about 2 K N P. At these sizes the search finds a
# faster form by the estimate and by measurement alike.
CHAIN = """
def chain(float(M,K) A, float(K,N) B, float(N,P) C) -> (D) {
  T = matmul(A, B)
  D = matmul(T, C)
}
"""
SIZES = {"M": 128, "K": 256, "N": 256, "P": 4}
# Room for the search to finish on a slow or loaded machine: a search
# stops at its budget, possibly before it found the faster form.
BUDGET = 60.0


def small_integers(shape, seed):
    """Values in {-2, ..., 1}: every sum of the chain is exact in float32,
    whatever its order, so the two programs agree exactly."""
    return np.random.default_rng(seed).integers(-2, 2, shape).astype(np.float32)


def chain_inputs(seed):
    m, k, n, p = (SIZES[s] for s in "MKNP")
    return small_integers((m, k), seed), small_integers((k, n), seed + 1), small_integers((n, p), seed + 2)


def test_the_optimized_program_computes_what_the_original_does():
    o = tessera.optimize(CHAIN, sizes=SIZES, budget=BUDGET, measure=False)
    assert o.entry == "chain"
    assert o.changed and not o.measured
    assert o.time < o.original_time and o.speedup > 1.0
    assert o.steps, "the search changes the chain: it applies steps"
    for s in o.steps:
        assert set(s) == {"rule", "at", "ops", "verdict"}
        assert s["rule"] and s["at"] and s["verdict"]
        assert all(isinstance(op, str) for op in s["ops"])
    # The proof covers the part that computes differently: D, from A, B
    # and C, exactly over Z_p.
    assert o.proof is not None and "`D`: equivalent" in o.proof and "Z_p" in o.proof
    # `program` is TC: the optimized def (and the defs it calls that the
    # search made), compiled and run like any source.
    optimized = tessera.compile(o.program, entry="chain")
    original = tessera.compile(CHAIN)
    for seed in (0, 10):
        a, b, c = chain_inputs(seed)
        want = original(a, b, c)
        np.testing.assert_array_equal(optimized(a, b, c), want)
        np.testing.assert_array_equal(want, (a @ b) @ c)


def test_a_measured_search_is_faster_and_equal():
    o = tessera.optimize(CHAIN, sizes=SIZES, budget=BUDGET)
    assert o.measured and o.changed and o.steps
    assert o.time < o.original_time
    a, b, c = chain_inputs(20)
    np.testing.assert_array_equal(tessera.compile(o.program, entry="chain")(a, b, c), (a @ b) @ c)


def test_a_second_identical_request_is_answered_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    first = tessera.optimize(CHAIN, sizes=SIZES, budget=BUDGET, measure=False)
    second = tessera.optimize(CHAIN, sizes=SIZES, budget=BUDGET, measure=False)
    assert not first.cached and second.cached
    assert second.program == first.program
    assert second.steps == first.steps
    assert (second.original_time, second.time) == (first.original_time, first.time)
    assert str(second).endswith(", cached") and not str(first).endswith(", cached")
    # Other sizes are another search.
    assert not tessera.optimize(CHAIN, sizes={**SIZES, "M": 64}, budget=BUDGET, measure=False).cached
    assert list(tmp_path.joinpath("optimize").glob("*.json")), "the results are stored on disk"


def test_an_unchanged_def_is_its_own_text():
    src = "def twice(float(N) A) -> (B) { B(i) = A(i) * 2.0 }\n"
    o = tessera.optimize(src, sizes={"N": 16}, measure=False)
    assert not o.changed and o.steps == [] and o.proof is None
    f = tessera.compile(o.program)
    np.testing.assert_array_equal(f(np.arange(16, dtype=np.float32)), np.arange(16, dtype=np.float32) * 2)


def test_repr_and_str():
    o = tessera.optimize(CHAIN, sizes=SIZES, budget=BUDGET, measure=False)
    assert repr(o).startswith("tessera.Optimized(entry='chain', changed=True, steps=")
    assert str(o).startswith("optimized `chain`: ")


def test_bad_options_raise():
    with pytest.raises(tessera.InputError, match="budget of 0 seconds"):
        tessera.optimize(CHAIN, sizes=SIZES, budget=0)
    with pytest.raises(tessera.InputError, match="is not a number of seconds"):
        tessera.optimize(CHAIN, sizes=SIZES, budget=float("nan"))
    with pytest.raises(tessera.InputError, match="is not a number of seconds"):
        tessera.optimize(CHAIN, sizes=SIZES, budget=-1.0)
    with pytest.raises(tessera.InputError, match="top-k of 0"):
        tessera.optimize(CHAIN, sizes=SIZES, top_k=0)
    with pytest.raises(tessera.InputError, match="has no def `nope`"):
        tessera.optimize(CHAIN, entry="nope", sizes=SIZES)
    with pytest.raises(tessera.ParseError):
        tessera.optimize("def chain(", sizes=SIZES)
    with pytest.raises(tessera.ShapeError, match="size `K` of def `chain` has no value"):
        tessera.optimize(CHAIN, sizes={"M": 4})


SESSION_MODELS = ["resnet_basic_block", "transpose_matmul"]


@pytest.mark.parametrize("name", SESSION_MODELS)
def test_an_optimized_session_gives_the_same_outputs(name):
    d = FIXTURES / name
    feed = fixture_feed(d)
    plain = tessera.InferenceSession(d / "model.onnx").run(None, feed)
    fast = tessera.InferenceSession(d / "model.onnx", optimize=True).run(None, feed)
    assert len(fast) == len(plain)
    for f, p in zip(fast, plain):
        assert_close(f, p, name)


def test_session_search_options_are_checked():
    path = FIXTURES / "transpose_matmul" / "model.onnx"
    with pytest.raises(tessera.InputError, match="budget of 0 seconds"):
        tessera.InferenceSession(path, optimize=True, budget=0)
    with pytest.raises(tessera.InputError, match="only with `optimize=True`"):
        tessera.InferenceSession(path, budget=5.0)


def test_a_model_is_optimized_from_its_path():
    o = tessera.optimize(FIXTURES / "transpose_matmul" / "model.onnx", measure=False)
    assert o.entry == "model"
    assert o.program.startswith("def model(")


# A transposed convolution (stride 2, 4x4 kernel, padding 1) written as
# the guarded gather: derivation (OLLIE) turns it into a matmul over the
# input channels and a kernel gathering the taps, which the estimates
# prefer; explored one rule application deeper than the default.
CONV_TRANSPOSE = """
def convT(float(N,C,H,W) X, float(C,F,4,4) Wt) -> (Y) {
  Y(n, f, oh, ow) +=! (th % 2 == 0 && th >= 0 && th < 2 * H && tw % 2 == 0 && tw >= 0 && tw < 2 * W)
                      ? X(n, c, th / 2, tw / 2) * Wt(c, f, kh, kw) : 0.0
    where oh in 0:2 * H, ow in 0:2 * W, kh in 0:4, kw in 0:4, th = oh + 1 - kh, tw = ow + 1 - kw
}
"""
CONV_TRANSPOSE_SIZES = {"N": 2, "C": 8, "H": 4, "W": 4, "F": 8}


def test_derivation_turns_a_transposed_convolution_into_a_matmul():
    o = tessera.optimize(CONV_TRANSPOSE, sizes=CONV_TRANSPOSE_SIZES, budget=BUDGET, measure=False, derive_depth=5)
    assert o.changed
    assert [s["rule"].split(":")[0] for s in o.steps] == ["derivation"]
    assert "equivalent" in o.steps[0]["verdict"]
    rng = np.random.default_rng(3)
    x = rng.integers(-2, 2, (2, 8, 4, 4)).astype(np.float32)
    w = rng.integers(-2, 2, (8, 8, 4, 4)).astype(np.float32)
    want = tessera.compile(CONV_TRANSPOSE, sizes=CONV_TRANSPOSE_SIZES)(x, w)
    got = tessera.compile(o.program, entry="convT")(x, w)
    np.testing.assert_array_equal(got, want)


def test_derive_depth_zero_leaves_the_comprehension_alone():
    o = tessera.optimize(CONV_TRANSPOSE, sizes=CONV_TRANSPOSE_SIZES, budget=BUDGET, measure=False, derive_depth=0)
    assert not o.changed and not o.steps
