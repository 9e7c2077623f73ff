"""Tests of ``reduction_app.configs``."""
