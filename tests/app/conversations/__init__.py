"""Tests of ``reduction_app.conversations``."""
