"""``symgrad.codegen``, the public name of symgrad's build-time code generation; the code is extras/codegen.py."""
from .extras.codegen import *  # noqa: F401,F403
from .extras.codegen import __all__  # noqa: F401
