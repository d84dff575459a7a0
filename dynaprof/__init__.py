"""dynaprof: profile where torch.compile spends its compile time."""

__version__ = "0.1.0"
