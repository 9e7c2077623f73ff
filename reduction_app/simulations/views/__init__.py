"""The simulation pages: Compare and Tune."""
