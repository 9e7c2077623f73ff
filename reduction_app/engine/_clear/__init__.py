"""The clear phase: before a model call, old tool results are offloaded and replaced by
placeholders. ``_phase`` decides whether and where a pass runs, ``_pass`` does it to a
working copy, with ``_rewriter``, ``_superseded``, ``_cache_aware``, ``_manifest``,
``_figures`` (its events), ``_landmarks`` (what a pass carries to the next) and
``_pairing`` (no call split from its result).
"""
