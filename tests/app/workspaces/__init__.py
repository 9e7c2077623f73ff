"""Tests of ``reduction_app.workspaces``."""
