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
    if fn.source.method:
        raise TypeError(f"cannot pickle {fn.py_name}: a method's Function is pickled bound to an "
                        f"instance (pickle obj.{fn.py_name}, not the class attribute)")
    state = {"name": fn.py_name, "dtype": str(fn.dtype), "args": fn.args, "options": fn.options,
             "steps": fn.steps, "structure": fn.structure, "program": fn.traced}
    loops = fn.source.program(fn.name)
    if loops is not fn.traced:  # its arrays kept as loops, which its sparse form takes (sparsity_loops.py)
        state["loops_program"] = loops
    kernel = fn.pipeline.runs().memo.get("kernel")
    if kernel is not None:
        state["kernel"] = (kernel[1], kernel[0])
    from ..build import compile as build
    state["library"] = _shipped(fn.key)
    from ..transforms.kinds import kind
    sparse = fn.sparse_form() if fn.steps and kind(fn.steps[-1][0]).sparse else None  # (shipped where loaded here)
    state["sparse_library"] = _shipped(sparse.key) if sparse is not None and sparse.built else None
    return (PICKLE_FORMAT, build.VERSION, build.source_digest(), pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))


def _shipped(key):
    """The library of ``key`` as a pickle ships it, where it was loaded in this process, else None."""
    from ..build import cache
    shipped = cache.library_bytes(key)  # read once per process, None if never loaded here
    return None if shipped is None else {"key": key, "bytes": shipped[0], "sha256": shipped[1], "info": shipped[2]}


def restore(fmt, version, digest, state, function, source):
    """A pickled Function (class ``function``, its program a ``source``): its header checked
    against this symgrad (an older or newer one may trace, differentiate or lay out results
    otherwise) before its state (bytes) is rebuilt. A shipped kernel and library are offered
    to its pipeline (memo.Pipeline.offer), which uses a library only for the key it was built for."""
    from ..build import compile as build
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
    from ..transforms.kinds import kind
    steps = state["steps"]
    loops = "loops_program" in state and steps and kind(steps[-1][0]).sparse  # its sparse form of the loops
    f = function(state["name"], source(program=state["program"]), state["dtype"], args=state["args"],
                 options=state["options"], steps=steps, structure=state["structure"],
                 sparse_source=source(program=state["loops_program"]) if loops else None)
    library = state.get("library")
    if state.get("kernel") is not None:
        f.pipeline.runs().offer(kernel=state["kernel"])
    if isinstance(library, dict):
        f.pipeline.offer(library=library)
    if isinstance(state.get("sparse_library"), dict):
        f.sparse_form().pipeline.offer(library=state["sparse_library"])
    return f
