"""C source -> loaded library: the compiler and its flags (compile), the kernel cache (cache,
cachedir), loading (library), the precompiled header (pch), child processes (spawn)."""
