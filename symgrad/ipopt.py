"""``symgrad.ipopt``, the public name of symgrad's nonlinear programs for IPOPT; the code is extras/ipopt.py."""
from .extras.ipopt import *  # noqa: F401,F403
from .extras.ipopt import __all__  # noqa: F401
