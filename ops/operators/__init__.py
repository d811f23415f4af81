"""One module per operator: argument normalization, MLIR rendering and the public entry point."""
