"""The engine over HTTP: ``/truncate`` and ``/clear`` run the engine inside a recorded
session (offloads staged, then files, events and conversation written at once)."""
