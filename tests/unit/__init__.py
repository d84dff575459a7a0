"""Model, analysis and importers on hand-built sessions and fixed logs; capture internals."""
