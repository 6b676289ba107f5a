"""Cross-process coordination over Redis: client, pub/sub, locks, dedupe, wake-ups."""
