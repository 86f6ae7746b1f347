"""symgrad at its edges with sympy: expressions in (from_sympy), a program out for reading
(to_sympy), and the real functions both use (realfns). Never imported on the compile path."""
