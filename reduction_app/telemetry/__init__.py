"""Live traffic in: an OTLP/HTTP endpoint for agents' traces and logs, read into
conversations (with the reductions their spans carry) by the task workers."""
