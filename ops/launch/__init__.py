"""Launching compiled modules' kernels directly on a framework's stream (see ``plan`` and ``cuda``)."""
