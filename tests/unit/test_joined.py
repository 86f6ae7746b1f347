"""Large arrays joined by np.concatenate / hstack / vstack / append stay loops (tracing/pieces.py):
each function traced with its arrays as loops equals numpy and the program traced element by
element, value and gradient, on the IR without a C compiler (ir/evaluate.py)."""
import logging

import numpy as np
import pytest

from symgrad.ir.evaluate import evaluate
from symgrad.tracing import trace
from symgrad.transforms import derive

N = 1200
LOOP = 128  # Options.loop_min_size's default
D = np.linspace(0.5, 1.5, N)

CASES = {
    # a residual from pieces (differences, a data-weighted part, boundary terms as a small array)
    "residual": (lambda x: np.sum(np.concatenate([x[1:] - x[:-1], np.sin(x[:400]) * D[:400],
                                                  np.array([x[0] - 1.0, x[-1] * x[3]])]) ** 2), [(N,)]),
    # the dot of a large argument with a joined vector (a Lagrangian's lambda . g(x))
    "dot": (lambda x, lam: np.dot(lam, np.concatenate([np.cos(x[1:]) - x[:-1], x[:N - 1] ** 2, [x[0], x[5]]])),
            [(N,), (2 * N,)]),
    # slices across the joints, negative steps, an integer entry, a joined array reused
    "slices": (lambda x: (lambda c: np.sum(c[:-1:3] * c[1::3]) + np.sum(c[1000:1420] ** 3) + c[N + 7]
                          + np.sum(c[::-7] * D[:len(c[::-7])]) + np.sum(c[-5:2:-2]))(
        np.concatenate([x, np.exp(-x), x[:400] * x[400:800]])), [(N,)]),
    # hstack of 1-d arrays and a scalar, append, mean and var of a joined array
    "hstack": (lambda x: np.mean(np.hstack([x, x[0] * 2.0, np.tanh(x[:500])]) ** 2)
               + np.var(np.append(x[10:], D[:5] * x[:5])), [(N,)]),
    # 2-d: joined along axis 1 and along axis 0, summed along either axis, transposed
    "matrix": (lambda x: np.sum(np.sum(np.concatenate([x.reshape(200, 6), np.sin(x.reshape(200, 6)[:, :4])], axis=1)
                                       ** 2, axis=1) * np.arange(200.0))
               + np.sum(np.vstack([x.reshape(200, 6), x.reshape(200, 6)[:150] ** 2]).T[2] * 1.5), [(N,)]),
    # a joined array in a product with another joined at other joints (cut at both)
    "two_joins": (lambda x: np.sum(np.concatenate([x[:300], x[300:] ** 2]) * np.concatenate([np.sin(x[:670]),
                                                                                           x[670:] + 1.0])), [(N,)]),
}


@pytest.mark.parametrize("name", CASES)
def test_joined_arrays_stay_loops_and_equal_the_unrolled_trace(name, caplog):
    f, shapes = CASES[name]
    rng = np.random.default_rng(len(name))
    args = [rng.standard_normal(s) for s in shapes]
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        prog = trace(f, shapes, loop_min=LOOP)
    assert not caplog.records
    flat = trace(f, shapes)
    assert not flat.has_loops
    assert prog.has_loops and prog.count_ops() < flat.count_ops() / 3  # loops, not one node an entry
    np.testing.assert_allclose(evaluate(prog, *args)[0], f(*args), rtol=1e-13)
    nums = tuple(range(len(shapes)))
    got, want = evaluate(derive.grad(prog, nums), *args), evaluate(derive.grad(flat, nums), *args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13 * np.abs(w).max())


def test_joining_checks_shapes_as_numpy_does():
    def f(x):
        return np.sum(np.concatenate([x.reshape(40, 30), x.reshape(30, 40)], axis=1))
    with pytest.raises(ValueError, match="along dimension 0, the array at index 0 has size 40 and the array at "
                                         "index 1 has size 30"):
        trace(f, [(N,)], loop_min=LOOP)
    with pytest.raises(ValueError, match="same number of dimensions"):
        trace(lambda x: np.sum(np.concatenate([x, x.reshape(40, 30)])), [(N,)], loop_min=LOOP)
    with pytest.raises(np.exceptions.AxisError):
        trace(lambda x: np.sum(np.concatenate([x, x], axis=1)), [(N,)], loop_min=LOOP)
    with pytest.raises(ValueError, match="zero-dimensional"):
        trace(lambda x: np.sum(np.concatenate([x, x[0]])), [(N,)], loop_min=LOOP)


def test_a_joined_result_is_written_part_by_part_with_the_signs_of_its_zeros():
    def f(x):  # a large part, a small one, numbers, a negative zero, a part joined along axis 1
        a = np.concatenate([x.reshape(200, 6), -0.0 * x.reshape(200, 6)[:, :2]], axis=1)
        return np.concatenate([x[1:] - x[:-1] ** 2, np.array([x[0], -0.0, 2.5]), a[:, 7], a.T[2], np.sin(x[:50])])
    prog = trace(f, [(N,)], loop_min=LOOP)
    out = prog.outputs[0]
    assert out.stores and out.adds and any(loops for _, _, loops, _ in out.adds)
    x = np.random.default_rng(3).standard_normal(N)
    got, want = evaluate(prog, x)[0], f(x)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert "] = " in str(prog)  # stores print as assignments
