"""Where offloaded output goes and how it comes back: the backends (``_backends``), the
offload paths (``_paths``) and restoring reduced results from their files (``_restore``).
"""
