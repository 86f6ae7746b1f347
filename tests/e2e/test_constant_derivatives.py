"""A derivative that comes out constant, of a function whose arrays stayed loops over
closed-over data: its kernel still takes the data (a review find: 'null function' where the
Hessian of a linear sum had no loops left to bind them)."""
import numpy as np

import symgrad

DATA = np.linspace(-1.0, 1.0, 1000)


def test_the_hessian_of_a_linear_sum_over_data_is_zero():
    F = symgrad.compile(lambda p: np.sum(p[0] * DATA + p[1]) + 0.5 * p[0], shapes=[(2,)])
    p = np.array([0.7, 0.3])
    assert F.loops
    np.testing.assert_allclose(F.grad(p), [DATA.sum() + 0.5, 1000.0], rtol=1e-12, atol=1e-9)
    assert F.hessian(p).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert F.hvp(p, np.array([1.0, 2.0])).tolist() == [0.0, 0.0]
    assert F.jacobian.jacobian(p).tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_a_constant_second_derivative_of_a_picked_sum():
    S = symgrad.compile(lambda t: np.sum(np.maximum(t * DATA, 0.25)), shapes=[()])
    assert S.derivative(2)(1.5) == 0.0
    assert S.grad(1.5) == np.sum(DATA[1.5 * DATA > 0.25])
