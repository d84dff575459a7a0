"""The torch hooks, one module for each thing hooked, each exposing ``install_<what>(recorder)``.

``capture.torch_hooks.Recorder.install`` runs them in order, each guarded: one that raises
(a moved torch internal) becomes a warning naming the torch version, and the facts it would have
given stay unknown. Every hook reaches torch's private modules through
``capture.torch_private._private`` and is inert outside a compile window (``recorder.current``).
"""
