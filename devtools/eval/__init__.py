"""Offline evaluations of the window on public conversational data (``relaydesk eval``)."""
