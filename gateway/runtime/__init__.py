"""Process plumbing: logs, metrics, clock, tracked tasks, outage detection."""
