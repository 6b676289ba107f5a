"""Rate limits on the public doors (`limiter.py`: the limiter; `doors.py`: the HTTP side)."""
