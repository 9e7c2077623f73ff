"""The simulation pages: Compare, Tune, and the simulations (replays and sweeps) run."""
