"""Adapters that drop the engine into agent frameworks.

One module per framework, each importable without Django and each needing only its own
framework (an optional extra; the package is not published yet, so from a clone:
``pip install -e '.[langchain]'``, ``[openai-agents]``, ``[pydantic-ai]``, or
``[integrations]`` for all three). Each is a thin translation between the framework's
message types and the engine's public surface (:mod:`reduction_app.engine`), with one
constructor shape (``config``, ``backend=``, ``on_event=``); the work itself is the
engine's ``truncate_output`` and ``answer_read_file``.
"""
