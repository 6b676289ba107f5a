"""A message's identity evidence, read under its tenant's identity rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from channels.base import InboundMessage, PayloadInvalid
from gateway.config import Settings
from gateway.customers.evidence import EvidenceRule, observe_inbound
from gateway.customers.resolve import IdentityRules, rules_for
from gateway.tenants import TenantSettings
from identity import IdentityObservation


@dataclass(frozen=True, slots=True)
class Observer:
    settings: Settings
    evidence: Mapping[str, EvidenceRule]  # by channel name

    def observe(
        self, inbound: InboundMessage, tenant: TenantSettings
    ) -> tuple[IdentityObservation, IdentityRules]:
        """The identity evidence of the message under the tenant's identity rules."""
        rule = self.evidence.get(inbound.channel)
        if rule is None:
            raise PayloadInvalid(f"unknown channel {inbound.channel!r}")
        region = self.settings.default_region
        rules = rules_for(tenant, region)
        secret = self.settings.webchat_secret
        observation = observe_inbound(
            rule,
            inbound,
            webchat_secret=secret.get_secret_value() if secret else None,
            region=region,
            blocked=rules.blocked,
        )
        return observation, rules
