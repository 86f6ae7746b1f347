"""``symgrad.dask``, the public name of symgrad's Dask arrays in and out; the code is extras/dask.py."""
from .extras.dask import *  # noqa: F401,F403
from .extras.dask import __all__  # noqa: F401
