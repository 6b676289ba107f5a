"""Names of actions: what a model provider accepts as a function name, and the gateway's own."""

from __future__ import annotations

from typing import Final

# OpenAI's and Anthropic's function names: letters, digits, "_" and "-", at most 64.
TOOL_NAME_PATTERN: Final = r"^[A-Za-z0-9_-]{1,64}$"
# The action the gateway offers itself when a gated one is out of reach.
START_VERIFICATION: Final = "start_verification"
BUILT_IN: Final = frozenset({START_VERIFICATION})
