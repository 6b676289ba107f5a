"""Storage errors callers handle differently.

StorageError
├── CustomerScopeRequired   a read of customer data without a customer id (a leak risk)
├── DuplicateMessage        (channel, provider message id) already stored
├── DuplicateKey            an Idempotency-Key already stored for its route
├── InvalidFactSource       a fact whose source message is not this customer's
├── IdentityRace            the identity appeared after it was resolved as new: resolve again
└── RecordNotFound
"""

from __future__ import annotations


class StorageError(Exception):
    pass


class CustomerScopeRequired(StorageError, ValueError):
    pass


class DuplicateMessage(StorageError):
    def __init__(self, channel: str, provider_message_id: str) -> None:
        super().__init__(f"message {provider_message_id!r} on {channel} is already stored")
        self.channel = channel
        self.provider_message_id = provider_message_id


class DuplicateKey(StorageError):
    """The (key, method, path) of an `Idempotency-Key` is stored already."""


class InvalidFactSource(StorageError, ValueError):
    pass


class RecordNotFound(StorageError, LookupError):
    pass


def require_customer(customer_id: str | None) -> str:
    """Every read of facts, messages or summaries is scoped to one customer."""
    if not customer_id or not isinstance(customer_id, str):
        raise CustomerScopeRequired("a customer id is required to read customer data")
    return customer_id


class IdentityRace(StorageError):
    """A concurrent first message of the same sender stored its identity after this one was
    resolved as unknown; writing on would give the sender a second customer. Retry."""
