"""dynaprof's version: a leaf module (it imports nothing), so every layer may read it."""

__version__ = "0.1.0"
