import math
import math as m
import numpy as np
import symgrad
from math import exp2 as _m_exp2


def _make0():
    c = 1.0

    def inner(t):
        return c * 3
    return inner


h0 = _make0()


def h1(t):
    acc = 0.0
    for k in range(1, 4):
        acc = acc + t / k
    return acc


def _make2():
    c = 1.0

    def inner(t):
        return c * math.sqrt(0.5)
    return inner


h2 = _make2()


def h3(t):
    return t


def _make4():
    c = 1.0

    def inner(t):
        return c * t
    return inner


h4 = _make4()


def fuzz(v):
    return np.array([math.pow(v[0], 4),
        (3 ** -1.0),
        symgrad.where(2.5 > v[0], v[0], 3),
        v[1],
        (np.minimum(v[2], v[2]) + (v[2] ** (1 / 3))),
        np.arctan2(0.125, v[1]),
        math.trunc((0.5 ** v[0])),
        h0(v[2]),
        (-m.erfc(v[1])),
        (v[2] ** 5),
        (math.copysign(v[1], 4) ** (1 / 3)),
        4,
        ((3 ** -0.5) * (-math.sqrt(v[1]))),
        np.power(np.floor((--0.3)), 4.0),
        (-np.power(v[0], 2.0)),
        np.abs(abs(v[2])),
        v[0],
        h1(-2),
        np.minimum(math.pow(1, 0.5), symgrad.where(v[1] > 2, -0.3, 0.25)),
        (-v[0]),
        h2((np.where(v[0] > 0.1, v[1], 4) * math.cosh(v[0]))),
        math.copysign((v[2] / 0.125), math.pow(4, 2)),
        max((-v[2]), symgrad.where(v[1] > -2, v[2], v[1])),
        np.absolute(v[1]),
        math.copysign(math.acos(v[2]), v[1]),
        (0.25 - v[0]),
        math.fabs(h3(v[2])),
        (v[1] * v[0]),
        np.where(v[1] > v[0], 0.1, v[1]),
        (4 / 10),
        math.hypot((-0.25), -0.3),
        np.abs(math.atan2((v[2] ** 1.5), v[2])),
        (np.power(v[2], 0.125) ** -0.5),
        (pow(np.sign(v[1]), 4) ** np.abs(np.arctan2(10, v[2]))),
        np.abs(m.atan(np.radians(1.75))),
        (symgrad.where(v[1] > v[1], v[1], v[0]) ** 1),
        math.copysign(0.1, v[2]),
        np.arctan2(m.sinh(-1.5), v[0]),
        np.copysign(v[2], v[0]),
        h4(v[2]),
        math.pow(math.pow(v[1], 1), np.sign(v[2])),
        v[1],
        math.fabs(np.power(v[1], (1 / 3))),
        math.pow(v[2], -2),
        1,
        1,
        np.where(math.ceil((v[1] ** (1 / 3))) > np.abs(math.cos(v[1])), _m_exp2((-v[0])), (np.minimum(v[2], 3) + v[0])),
        (symgrad.where(v[2] > 0.125, 2, -0.3) ** 2.0),
        (np.power(10, v[2]) ** 5)])
