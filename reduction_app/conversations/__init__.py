"""Recorded conversations: storing them, the API, the list and a conversation's page
(context window chart and message timeline)."""
