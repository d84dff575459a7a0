"""The ``dynaprof run`` child's ``sitecustomize`` (this folder goes first on its ``PYTHONPATH``)."""
