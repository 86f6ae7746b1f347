"""Program -> Program transforms: derivatives (derive.py) and the derivative kinds (kinds.py)."""
