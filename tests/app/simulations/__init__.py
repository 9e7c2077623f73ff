"""Tests of ``reduction_app.simulations``."""
