"""symgrad's exceptions."""


class TraceError(Exception):
    """The tracer met Python it cannot turn into an exact expression."""


class CompileError(Exception):
    """Generating, compiling or loading a kernel failed."""
