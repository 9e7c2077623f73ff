"""Adapters that drop the engine into agent frameworks.

One module per framework, each importable without Django and each needing only its own
framework (an optional extra: ``pip install 'reduction-lab[langchain]'``,
``[openai-agents]``, ``[pydantic-ai]``, or ``[integrations]`` for all three). Each is a
thin translation between the framework's message types and the engine's public surface
(:mod:`reduction_app.engine`), keeping the engine's state across the calls of one agent
run: truncation where a tool returns, clearing before each model call.
"""
