"""Adapters that drop the engine into agent frameworks.

One module per framework, each importable without Django and needing only its own
framework (an optional extra: docs/integrations.md). Each is a thin translation between
the framework's message types and the engine's public surface, with one constructor
shape (``config``, ``backend=``, ``on_event=``); the work itself is the engine's
``truncate_output`` and ``answer_read_file``.
"""
