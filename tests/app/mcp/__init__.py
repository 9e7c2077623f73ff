"""Tests of ``reduction_app.mcp``."""
