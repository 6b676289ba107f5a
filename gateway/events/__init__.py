"""Events for another system (`RELAYDESK_EVENTS_URL`): recorded with the change they announce,
sent signed and retried by the background work."""
