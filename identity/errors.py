"""The identity package's errors.

One shallow tree; each class exists because a caller handles it differently::

    IdentityError
    ├── InvalidIdentifier     a phone, e-mail, account or id that cannot be normalized (→ 400)
    ├── IdentityConfigError   tenant configuration that cannot be used: scope policy, link
    │                         limits, blocked values, a weak web chat secret (→ refuse to start)
    └── OwnershipConflict     a merge or split that cannot be planned as asked (→ 409)

Blocked values are not errors: they normalize fine and are then refused by the linking rules.
"""

from __future__ import annotations

__all__ = [
    "IdentityConfigError",
    "IdentityError",
    "InvalidIdentifier",
    "OwnershipConflict",
]


class IdentityError(Exception):
    """Base class of every error raised by `identity`."""


class InvalidIdentifier(IdentityError, ValueError):
    """A raw identifier cannot be normalized (malformed phone, e-mail, id, key)."""


class IdentityConfigError(IdentityError, ValueError):
    """Tenant identity configuration is invalid; raised when it is loaded, never per message."""


class OwnershipConflict(IdentityError):
    """An operator merge or split is inconsistent with the current ownership of records."""
