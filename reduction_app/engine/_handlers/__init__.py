"""The default handlers both phases resolve a tool to (``_defaults``), with what they
consult: the truncation limit of a call (``_limits``) and a cleared result's digest
(``_digests``). Below the runtime, which builds them from a config.
"""
