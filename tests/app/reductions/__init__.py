"""Tests of ``reduction_app.reductions``."""
