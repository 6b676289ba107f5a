"""Benchmarks of the gateway (``relaydesk bench …``).

``relaydesk bench context`` compares our window build with LangChain's ``trim_messages`` and a
naive builder over synthetic customer histories of growing size, and times ``POST /v1/context``
end to end on SQLite and PostgreSQL. langchain-core is needed only here (``relaydesk[bench]``).
"""

from __future__ import annotations

from devtools.bench.baselines import INSTALL_HINT, BaselineUnavailable
from devtools.bench.context_bench import (
    DEFAULT_REPEAT,
    DEFAULT_SIZES,
    BenchOptions,
    run_context_bench,
)
from devtools.bench.report import BenchResult, SizeResult
from devtools.bench.services import DEFAULT_POSTGRES_URL

__all__ = [
    "DEFAULT_POSTGRES_URL",
    "DEFAULT_REPEAT",
    "DEFAULT_SIZES",
    "INSTALL_HINT",
    "BaselineUnavailable",
    "BenchOptions",
    "BenchResult",
    "SizeResult",
    "run_context_bench",
]
