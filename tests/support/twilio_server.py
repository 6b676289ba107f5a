"""A local server speaking Twilio's Messages API (the part `messages.create` uses): the product's
`devtools.local_twilio.LocalTwilio`, under the name the tests know it by."""

from __future__ import annotations

from devtools.local_twilio import LocalTwilio as FakeTwilio

__all__ = ["FakeTwilio"]
