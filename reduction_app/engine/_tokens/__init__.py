"""Token counting: the counters (``_counters``), their caches (``_caches``) and the
offline loading of tiktoken encodings (``_encodings``).
"""
