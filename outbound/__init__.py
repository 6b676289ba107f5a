"""Server-side fetches of URLs the operator of the deployment did not choose, through one
guarded fetcher (`SafeFetcher`): public addresses only unless the deployment allows more, a
byte cap per kind, credentials only to their provider's hosts.

Imported by `channels/` and `gateway/`; imports neither (only the pure host patterns of
`context/`).
"""

from outbound.credentials import HostCredentials
from outbound.errors import FetchError, FetchFailed, FetchRefused, FetchTooLarge
from outbound.fetcher import Fetched, SafeFetcher
from outbound.kinds import FetchKind
from outbound.policy import FetchPolicy, blocked_reason

__all__ = [
    "FetchError",
    "FetchFailed",
    "FetchKind",
    "FetchPolicy",
    "FetchRefused",
    "FetchTooLarge",
    "Fetched",
    "HostCredentials",
    "SafeFetcher",
    "blocked_reason",
]
