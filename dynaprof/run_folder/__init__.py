"""Writing run folders: session.json, the rendered outputs and cProfile files (docs/architecture.md)."""
