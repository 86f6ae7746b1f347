"""Function pickling: by value (the traced program, never the Python function), with a header
that this symgrad checks before anything is rebuilt, and the loaded library shipped along for
a worker without a C compiler (adopted there only for the key it was built for)."""
from __future__ import annotations

import pickle

PICKLE_FORMAT = 1


def reduce(fn):
    """The arguments of function._unpickle for Function ``fn``: the header, then its state
    (shapes, structure, dtype, options, steps, the traced program; the generated kernel source
    when it exists and, when its library is loaded in this process, that library's bytes,
    SHA-256 and key)."""
    if fn._source.method:
        raise TypeError(f"cannot pickle {fn.py_name}: a method's Function is pickled bound to an "
                        f"instance (pickle obj.{fn.py_name}, not the class attribute)")
    state = {"name": fn.py_name, "dtype": str(fn.dtype), "args": fn.args, "options": fn.options,
             "steps": fn._steps, "structure": fn._structure, "program": fn.traced}
    loops = fn._source.program(fn.name)
    if loops is not fn.traced:  # its arrays kept as loops, which its sparse form takes (sparsity_loops.py)
        state["loops_program"] = loops
    runs = fn._runs()
    if runs._kernel is not None:
        state["kernel"] = (runs._kernel_bits, runs._kernel)
    from ..build import compile as build, cache
    key = fn.key
    shipped = cache.library_bytes(key)  # read once per process, None if never loaded here
    if shipped is not None:
        state["library"] = {"key": key, "bytes": shipped[0], "sha256": shipped[1], "info": shipped[2]}
    sparse = fn._derived.get("sparse")  # its sparse form (F.jacobian(x, sparse=True)), where loaded here
    shipped = cache.library_bytes(sparse.key) if sparse is not None and sparse._plan is not None else None
    if shipped is not None:
        state["sparse_library"] = {"key": sparse.key, "bytes": shipped[0], "sha256": shipped[1], "info": shipped[2]}
    return (PICKLE_FORMAT, build.VERSION, build.source_digest(), pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))


def restore(fmt, version, digest, state, function, source):
    """A pickled Function (class ``function``, its program a ``source``): its header checked
    against this symgrad (an older or newer one may trace, differentiate or lay out results
    otherwise) before its state (bytes) is rebuilt. A shipped library is kept for
    Function._library, which uses it only for the key it was built for."""
    from ..build import compile as build, host
    if fmt != PICKLE_FORMAT or version != build.VERSION:
        raise pickle.UnpicklingError(
            f"this pickle holds a Function of symgrad {version} (pickle format {fmt}), but this is symgrad "
            f"{build.VERSION} (format {PICKLE_FORMAT}): pickle it again with this version, or install "
            f"symgrad=={version} where it is loaded")
    if digest != build.source_digest():
        raise pickle.UnpicklingError(
            f"this pickle holds a Function of another build of symgrad {version} (its source differs from "
            "this installation's): install the same symgrad everywhere the Function travels")
    state = pickle.loads(state)
    f = function(state["name"], source(program=state["program"]), state["dtype"], args=state["args"],
                 options=state["options"], steps=state["steps"], structure=state["structure"])
    bits, kernel = state.get("kernel", (None, None))
    if kernel is not None:
        if bits == host.vector_bits():  # rendered for this CPU's vector width: no rendering here
            runs = f._runs()
            runs._kernel, runs._kernel_bits = kernel, bits
    if isinstance(state.get("library"), dict):
        f._shipped = state["library"]
    from ..transforms.kinds import kind
    if "loops_program" in state and f._steps and kind(f._steps[-1][0]).sparse:  # its sparse form of the loops
        f._derived["sparse"] = function(state["name"], source(program=state["loops_program"]), state["dtype"],
                                        args=state["args"], options=state["options"], steps=state["steps"],
                                        structure=state["structure"])._sparse()
    if isinstance(state.get("sparse_library"), dict):
        f._sparse()._shipped = state["sparse_library"]
    return f
