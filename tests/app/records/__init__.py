"""Tests of ``reduction_app.records``."""
