"""Where the shared third-party payloads and evaluation data live: `shared/` next to the
repository (override with RELAYDESK_SHARED_DIR)."""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(
    os.environ.get("RELAYDESK_SHARED_DIR", Path(__file__).resolve().parents[3] / "shared")
)
FIXTURES = SHARED / "fixtures"
EVAL = SHARED / "eval"
