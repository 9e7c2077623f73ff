"""The records' dashboard pages: overview, events, files."""
