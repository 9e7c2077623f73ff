"""The truncation phase: after a tool returns, a too-long output is offloaded and
replaced. ``_buffered`` handles whole outputs, ``_streams`` cuts streams incrementally.
"""
