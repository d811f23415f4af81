"""The operators, one module each, on the protocol of ``ops/operator.py``; their registry is ``ops/registry.py``."""
