"""The verbs are memoised on their Function (symgrad/verbs.py): ``F.grad`` is one object, made
at its first read and read as a plain attribute after, so ``F.grad(x)`` in a loop costs what
``G(x)`` costs with ``G = F.grad`` (issue 47). Nothing here compiles a kernel."""
import math
import pickle
import threading

import pytest

import symgrad
from symgrad.function import Function
from symgrad.call.verbs import OFFERS

VERBS = [name for name, o in OFFERS.items() if o.doc]


def f(x, y):
    return math.sin(x) * y + x * x


class Model:
    @symgrad.compile
    def energy(self, x):
        return self.k * x * x

    def __init__(self, k):
        self.k = k


def _no_more_deriving(monkeypatch):
    def boom(self, *args, **kwargs):
        raise AssertionError("a verb was derived again at a later read")
    monkeypatch.setattr(Function, "_derive", boom)


@pytest.mark.parametrize("verb", VERBS)
def test_a_verb_is_one_object_made_once(verb, monkeypatch):
    F = symgrad.compile(f)
    G = getattr(F, verb)
    _no_more_deriving(monkeypatch)  # every later read: a plain attribute read, no work
    assert getattr(F, verb) is G and getattr(F, verb) is G


def test_a_methods_function_per_instance_keeps_its_own_verbs(monkeypatch):
    a, b = Model(2.0), Model(3.0)
    ga, ha, gb = a.energy.grad, a.energy.hessian, b.energy.grad
    assert ga is not gb
    _no_more_deriving(monkeypatch)
    assert a.energy.grad is ga and a.energy.hessian is ha and b.energy.grad is gb


def test_verbs_of_verbs_and_by_argnums_are_as_before():
    F = symgrad.compile(f)
    assert F.grad.hessian is F.grad.hessian and F.grad.grad is F.grad.grad
    assert F.grad_wrt(0) is F.grad_wrt(0) and F.grad_wrt(0) is not F.grad
    assert F.jacobian_wrt(1, stack=True) is F.jacobian_wrt(1, stack=True)
    assert F.value_and_grad.kind == "value_and_grad" and F.grad.hessian.kind == "grad_hessian"


def test_the_class_keeps_the_verbs_documentation():
    for verb in VERBS:
        assert getattr(Function, verb).__doc__ == OFFERS[verb].doc
    with pytest.raises(ValueError, match="last derivative taken"):
        symgrad.compile(f).hvp.grad
    F = symgrad.compile(f)
    with pytest.raises(ValueError):
        F.hvp.hessian
    with pytest.raises(ValueError):  # a refusal is not memoised: it is said again
        F.hvp.hessian


def test_threads_reading_a_verb_at_once_get_one_object():
    F = symgrad.compile(f)
    seen, start = [], threading.Barrier(8)

    def read():
        start.wait()
        seen.append((F.grad, F.hessian))
    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(g) for g, _ in seen}) == 1 and len({id(h) for _, h in seen}) == 1


def test_a_pickled_function_makes_its_verbs_again():
    F = symgrad.compile(f)
    G = F.grad
    F2 = pickle.loads(pickle.dumps(F))  # the spec only (pickling.py), never the memo
    assert F2.grad is F2.grad and F2.grad is not G
    assert F2.grad.kind == "grad" and F2.grad.args == G.args

