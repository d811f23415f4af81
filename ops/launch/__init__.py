"""Launching compiled modules' kernels directly: on a framework's GPU stream, or on its CPU threads.

``plan`` reads a module's static host program into a launch plan at compile time; ``store`` keeps it beside the
module (``store.plan_of``: a stored module's verified plan, rebuilt where it is missing or damaged). ``cuda`` issues a
plan's commands through NVIDIA's driver bindings, ``hip`` through AMD's HIP runtime, and ``cpu`` runs a CPU plan's
dispatch functions (``elf``: its executables loaded into the process) on PyTorch's OpenMP threads. ``ops.executor``
chooses among them and IREE's runtime.
"""
