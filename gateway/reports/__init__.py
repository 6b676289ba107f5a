"""Outcome reports: what happened to the conversations of a date range, per day and channel."""
