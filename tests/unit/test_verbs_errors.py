"""A keyword a verb does not take is refused before anything is traced or compiled, by the
verb's name as the user wrote it, with the parameter probably meant."""
import inspect
import math

import pytest

import symgrad


def seed(x):
    return 64 * x * (1 - x) * math.pow(1 - 2 * x, 2) * math.pow(1 - 8 * x + 8 * x * x, 2)


def two(x, y):
    return x * y


@pytest.mark.parametrize("verb", ["grad", "jacobian", "hessian", "value_and_grad"])
def test_a_misspelt_keyword_of_a_verb_names_it_and_the_parameter_meant(verb):
    with pytest.raises(TypeError) as e:
        getattr(symgrad, verb)(seed, argnum=0)
    assert str(e.value) == (f"symgrad.{verb}() got an unexpected keyword argument 'argnum'; "
                            "did you mean 'argnums'?")


def test_derivative_takes_argnum_and_suggests_it_for_argnums():
    with pytest.raises(TypeError, match=r"^symgrad\.derivative\(\) got an unexpected keyword argument 'argnums'; "
                                        r"did you mean 'argnum'\?$"):
        symgrad.derivative(seed, n=1, argnums=0)


def test_a_keyword_like_none_lists_what_the_verb_takes():
    with pytest.raises(TypeError, match=r"symgrad\.grad\(\) got an unexpected keyword argument 'frobnicate'; "
                                        r"it takes f, argnums, shapes, dtype, options$"):
        symgrad.grad(seed, frobnicate=1)


@pytest.mark.parametrize("method, keyword, meant", [
    ("grad_wrt", "argnum", "argnums"), ("hessian_wrt", "argnum", "argnums"),
    ("jacobian_wrt", "argnum", "argnums"), ("jacobian_wrt", "stacked", "stack"),
    ("derivative", "argnums", "argnum")])
def test_a_misspelt_keyword_of_a_method_names_it(method, keyword, meant):
    F = symgrad.compile(two)
    with pytest.raises(TypeError) as e:
        getattr(F, method)(**{keyword: 0})
    assert str(e.value) == (f"Function.{method}() got an unexpected keyword argument {keyword!r}; "
                            f"did you mean {meant!r}?")
    assert F.source._program is None  # refused before tracing


def test_verbs_still_show_and_take_their_parameters():
    assert list(inspect.signature(symgrad.grad).parameters) == ["f", "argnums", "shapes", "dtype", "options"]
    assert list(inspect.signature(symgrad.derivative).parameters) == ["f", "n", "argnum", "shapes", "dtype",
                                                                       "options"]
    assert list(inspect.signature(symgrad.Function.jacobian_wrt).parameters) == ["self", "argnums", "stack"]
    F = symgrad.grad(two, argnums=1, shapes=None, dtype="float64", options=None)
    assert F.kind == "grad" and F.steps == (("grad", (1,)),)
    assert symgrad.grad.__name__ == "grad" and "argnums" in symgrad.grad.__doc__
    assert symgrad.compile(two).grad_wrt(argnums=(0, 1)).kind == "grad"
    with pytest.raises(TypeError, match="multiple values"):  # Python's own errors otherwise
        symgrad.grad(two, 0, argnums=1)


@pytest.mark.parametrize("field, value, expected", [
    ("sympy_cse_nodes", "100", "an int of at least 0"), ("sympy_cse_nodes", None, "an int of at least 0"),
    ("max_segment", -1, "an int of at least 0"), ("loop_min_size", True, "an int of at least 0"),
    ("segments_per_unit", 0, "an int of at least 1"), ("tile_numbers", 2.5, "an int of at least 0"),
    ("parallel_seconds", float("nan"), "a non-negative number"), ("hold_gil_seconds", "1e-6", "a non-negative number"),
])
def test_options_name_the_field_and_what_it_takes(field, value, expected):
    """A tunable of the wrong type or range is refused where the Options are made, by name
    (not later, deep in the pipeline, as a TypeError of string arithmetic)."""
    with pytest.raises(ValueError, match=f"Options.{field} must be {expected}, got {value!r}"):
        symgrad.Options(**{field: value})
    assert getattr(symgrad.Options(**{field: 7}), field) == 7


def test_options_switches_take_true_or_false():
    for value in (1, "yes", None):
        with pytest.raises(ValueError, match=f"Options.one_point must be True or False, got {value!r}"):
            symgrad.Options(one_point=value)
    assert symgrad.Options(one_point=True).one_point is True
    assert symgrad.Options().key() != symgrad.Options(one_point=True).key()


@pytest.mark.parametrize("large_kernel_ops", [0, 2500])
def test_grad_of_a_vector_function_names_grad_large_or_not(large_kernel_ops):
    """A large program's gradient runs its value_and_grad kernel: the refusal still names
    grad, as the user wrote it, and comes before anything is compiled."""
    import numpy as np
    F = symgrad.compile(lambda x: x * 2.0, [(3,)], options=symgrad.Options(large_kernel_ops=large_kernel_ops))
    with pytest.raises(ValueError, match=r"^grad needs a scalar-valued function, but it returns shape \(3,\); "
                                         r"use \.jacobian"):
        F.grad(np.ones(3))
