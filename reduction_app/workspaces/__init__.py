"""Workspaces (the unit of isolation) and their API keys."""
