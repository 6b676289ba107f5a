"""Repositories: functions that take an `AsyncSession` and return frozen records.

Sessions are opened by the caller (one per request or task) and passed in; nothing here
commits except where the docstring says so.
"""
