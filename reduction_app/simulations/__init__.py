"""Simulations: replaying a recorded conversation under configs (inline or on the task
worker), their API, and the Compare and Tune pages."""
