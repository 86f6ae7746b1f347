"""symgrad's exceptions."""


class TraceError(Exception):
    """The tracer met Python it cannot turn into an exact expression."""


class CompileError(Exception):
    """Generating, compiling or loading a kernel failed."""


class CacheError(Exception):
    """The kernel cache directory cannot be used safely (another user could change what runs)."""


class CacheWarning(UserWarning):
    """symgrad could not use its cache as it is and went on another way (said once)."""
