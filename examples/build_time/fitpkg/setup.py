from setuptools import setup

setup(cffi_modules=["build_kernels.py:ffibuilder"])
