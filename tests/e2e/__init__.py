"""Real runs: dynaprof run / report / compare on scripts with real torch, the API, the CLI."""
