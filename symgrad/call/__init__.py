"""Numpy arrays -> kernel -> numpy arrays: argument checks and broadcasting (calling), the
derivative verbs (verbs), sparse results (sparse), CuPy arrays (gpu), pickling (pickling)."""
