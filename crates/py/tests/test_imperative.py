"""`@tessera.function`: PyTorch-style functions with views, in-place
updates, loops and branches, converted (TensorSSA) and compiled once per
set of argument shapes and integer values, checked against values worked
out with numpy. The functions' bodies are never run by Python here
(PyTorch is not installed in the test environment): tessera reads their
source."""

import numpy as np
import pytest

import tessera
from conftest import assert_close


@tessera.function
def row_shift(x: "float32[N, M]", scale: float):
    y = x.clone()
    for i in range(y.shape[0]):
        y[i] -= y[i].amax(0)
    y *= scale
    return y


@tessera.function
def clamp_columns(x: "float32[N, M]", k: int):
    y = x.clone()
    y[:, ::k].clamp_(min=0.0)
    return y, y[:, 0]


@tessera.function
def double_until(x: "float32[N]", limit: float):
    y = x.clone()
    t = 0
    while y.sum() < limit and t < 10:
        y *= 2.0
        t += 1
    return y


@tessera.function
def channels_last_scores(x: "float32[C, H, W]", g: "float32[H, W]"):
    s = x.permute(1, 2, 0).reshape(-1, x.shape[0]).sigmoid()
    s.mul_(g.reshape(-1)[:, None].sigmoid())
    return s.sqrt()


def rng(seed):
    return np.random.default_rng(seed)


def test_a_loop_of_row_updates_matches_numpy():
    x = rng(0).standard_normal((5, 7)).astype(np.float32)
    want = (x - x.max(axis=1, keepdims=True)) * np.float32(0.5)
    assert_close(row_shift(x, 0.5), want, "row_shift")


def test_a_strided_in_place_clamp_and_a_view_of_the_result():
    x = rng(1).standard_normal((4, 6)).astype(np.float32)
    want = x.copy()
    want[:, ::2] = np.maximum(want[:, ::2], 0)
    y, col = clamp_columns(x, 2)
    assert_close(y, want, "y")
    assert_close(col, want[:, 0], "y[:, 0]")


def test_an_output_computed_through_a_transpose_is_lent_in_its_stored_order():
    x = rng(5).standard_normal((3, 4, 5)).astype(np.float32)
    g = rng(6).standard_normal((4, 5)).astype(np.float32)

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    want = np.sqrt(sigmoid(x.transpose(1, 2, 0).reshape(-1, 3)) * sigmoid(g.reshape(-1))[:, None])
    got = channels_last_scores(x, g)
    assert_close(got, want, "scores")
    # Computed, and stored, in the order x is read (channels first), and
    # lent as it is: a strided array, not a copy.
    assert not got.flags["C_CONTIGUOUS"] and got.flags["F_CONTIGUOUS"]


def test_a_data_dependent_while_loop():
    x = np.array([0.5, 0.25, 0.25], dtype=np.float32)
    # The sum doubles from 1 until it reaches 20: 1, 2, 4, 8, 16, 32.
    assert_close(double_until(x, 20.0), x * 32, "double_until")
    # The count bounds it too: 10 doublings at most.
    assert_close(double_until(x, 1e9), x * 1024, "double_until (bounded)")


def test_each_shape_and_integer_value_is_one_specialization():
    f = tessera.function(clamp_columns.python)
    x = np.ones((4, 6), dtype=np.float32)
    f(x, 2)
    f(x, 2)
    assert f.specializations == 1
    f(x, 3)
    f(np.ones((2, 6), dtype=np.float32), 3)
    assert f.specializations == 3


def test_the_converted_program_is_printed_with_its_regions():
    text = row_shift.functionalize(np.ones((3, 4), dtype=np.float32), 1.0)
    assert "= for i in 0:3 carry (" in text
    assert "yield" in text
    assert "1 mutations removed" in text or "2 mutations removed" in text


def test_a_construct_outside_the_subset_is_a_located_error():
    def uses_with(x: "float32[N]"):
        with open("f") as f:
            pass
        return x

    f = tessera.function(uses_with)
    with pytest.raises(tessera.ParseError, match=r"`with` statements are not in the subset"):
        f(np.ones(3, dtype=np.float32))


def test_a_wrong_argument_count_is_an_input_error():
    with pytest.raises(tessera.InputError, match="takes 2 arguments"):
        row_shift(np.ones((2, 2), dtype=np.float32), 1.0, 3)
