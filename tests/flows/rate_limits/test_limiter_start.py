"""Building the Redis-backed limiter imports redis-py only: the `limits` storage class would
otherwise try every Redis client it knows (coredis, valkey) when built, which cost each process
start (the background process's included, while messages wait) about half a second."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# In a fresh interpreter: the modules it tries to import while the limiter is built are recorded
# by a finder placed first on `sys.meta_path`, whether or not those clients are installed.
_PROBE = textwrap.dedent(
    """
    import sys

    from redis.asyncio import Redis

    from gateway.rate_limits.limiter import RateLimiter
    from gateway.runtime.metrics import Metrics

    tried = []

    class Recorder:
        def find_spec(self, name, path=None, target=None):
            tried.append(name)
            return None

    sys.meta_path.insert(0, Recorder())
    RateLimiter.shared(Redis(), "postgresql://probe/test", Metrics.create())
    print(",".join(sorted({name.split(".")[0] for name in tried})))
    """
)


def test_the_shared_limiter_tries_no_other_redis_client() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    tried = set(filter(None, completed.stdout.strip().split(",")))
    assert not tried & {"coredis", "valkey"}, tried
