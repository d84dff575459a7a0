"""Renderers, structurally: every output from hand-built sessions."""
