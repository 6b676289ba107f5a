"""Identity linking as a state machine: messages on every channel, claims, blocked values and
operator actions, applied to a `MemoryGraph` through the pure rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import jwt
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from identity import (
    DEFAULT_BLOCKED,
    ChannelIdentityKey,
    Evidence,
    IdentifierKind,
    LinkLevel,
    LinkLimits,
    MemoryGraph,
    NamedCustomerPolicy,
    PhoneCall,
    TelegramContactShare,
    TelegramSender,
    WebChatVisitor,
    WhatsAppSender,
    observe,
    resolve,
    verify_identity_token,
)

SECRET = "state-machine-webchat-secret-0123456789"
FORGER = "someone-else-entirely-0123456789abcdef"
NOW = datetime(2026, 3, 1, tzinfo=UTC)

# Small pools so identities collide often; the last entries of each are blocked values.
PHONES = ["+5511987654321", "+5521998765432", "+5511999999999", "+15005550006"]
EMAILS = ["ana@example.com", "bia@example.com", "test@example.com"]
SUBS = ["acct-1", "acct-2", "acct-3", "null"]
TELEGRAM = [1111111, 2222222, 777000]
VISITORS = ["v-1", "v-2", "v-3"]
# Tight limits so that merge protection is exercised as often as ordinary joins.
LIMITS = LinkLimits(web_account=1, phone=2, email=1, telegram=1)
stated = st.lists(st.sampled_from(PHONES + EMAILS), max_size=2)


def mint(sub: str, claims: dict[str, object], *, forged: bool, expired: bool) -> str:
    exp = NOW + (timedelta(hours=-2) if expired else timedelta(hours=1))
    payload = {"sub": sub, "exp": int(exp.timestamp()), **claims}
    return jwt.encode(payload, FORGER if forged else SECRET, algorithm="HS256")


class LinkingMachine(RuleBasedStateMachine):
    # What a customer named by the call center does to the caller id's other customer.
    named_customer: NamedCustomerPolicy = "propose"

    def __init__(self) -> None:
        super().__init__()
        self.graph = MemoryGraph()
        # The strongest level any evidence (or an operator) ever gave each channel identity.
        self.support: dict[ChannelIdentityKey, LinkLevel] = {}
        self.fresh = 0

    # Messages

    def message(self, evidence: Evidence, claims: list[str]) -> None:
        obs = observe(evidence, stated=claims)
        before = {key: self.graph.identity(key) for key in self.support}
        customers = self.graph.customers
        verified_owners = {
            h.customer_id
            for identifier in obs.verified
            for h in self.graph.holders(identifier)
            if h.level is LinkLevel.VERIFIED
        }
        previous_owner = self.graph.identity(obs.key)
        res = resolve(obs, self.graph, limits=LIMITS, named_customer=self.named_customer)
        counts_before = self.counts(res.customer_id)
        for absorbed in res.absorb:
            assert self.named_customer == "merge", "merged without the tenant's consent"
            assert previous_owner is not None and previous_owner.customer_id == absorbed
            assert previous_owner.level is not LinkLevel.VERIFIED, "absorbed a verified key"
            assert not any(self.counts(absorbed).values()), "absorbed verified identifiers"
        absorbed_keys = {key for c in res.absorb for key in self.graph.identity_keys(c)}
        customer = self.graph.apply(res)
        event(f"outcome {res.outcome}")
        if len(verified_owners) > 1 and previous_owner is None:
            event("new identity with verified matches on two customers")
        for pending in res.pending:
            event(f"pending {pending.reason}")
        if res.absorb:
            event("absorbed the caller id's customer")
        # The message is stored under the resolution's key: the observation's own, or the call's
        # own key when the call center named another customer than the caller id's.
        assert res.key in (obs.key, obs.named_key)
        self.graph.add_record("message", res.key)
        if claims:
            self.graph.add_record("fact", res.key)

        hint_lands = obs.customer_hint is not None and obs.customer_hint == customer
        ceiling = LinkLevel.VERIFIED if hint_lands else obs.level
        assert res.level <= ceiling, "link level exceeds the evidence"
        assert customers - set(res.absorb) <= self.graph.customers, "a message merged customers"
        for key, link in before.items():
            now = self.graph.identity(key)
            if key in absorbed_keys:
                assert now is not None and link is not None
                assert now.customer_id == customer, "an absorbed identity stayed behind"
                assert key == res.key or now.level == link.level, "an absorbed key re-levelled"
            elif key != res.key:
                assert now == link, "a message moved or re-levelled another identity"
        if res.key != obs.key:
            assert previous_owner is not None and previous_owner.customer_id != customer
            assert obs.customer_hint == customer, "the call left its caller id for no one"
            assert any(
                p.identity_key == obs.key and p.candidate_customer == customer
                for p in self.graph.pending
            ), "the caller id's customer was not proposed to the named one"
        previous = before.get(res.key)
        stored = self.graph.identity(res.key)
        assert stored is not None
        if previous is not None:
            if res.key not in absorbed_keys:
                assert customer == previous.customer_id, "a known identity changed customer"
            assert stored.level >= previous.level, "a stored link level fell"
        if res.outcome == "joined":
            assert ceiling is LinkLevel.VERIFIED, "an unverified claim joined a customer"
            assert verified_owners <= {customer}, "joined despite conflicting verified owners"
            held = self.graph.identifiers(customer)
            for identifier in obs.verified:
                assert held.get(identifier) is LinkLevel.VERIFIED, "joined without attaching"
        proposed = {p.candidate_customer for p in res.pending}
        assert verified_owners - {customer} <= proposed, "a verified match was not shown"
        for kind, count in self.counts(customer).items():
            cap = LIMITS.limit(kind)
            assert cap is None or count <= max(cap, counts_before.get(kind, 0)), "limit ignored"
        if DEFAULT_BLOCKED.is_blocked_key(obs.key):
            assert res.level is LinkLevel.ANONYMOUS and res.outcome != "joined"
            assert (res.attach, res.pending) == ((), ())
        for attached in res.attach:
            assert not DEFAULT_BLOCKED.is_blocked(attached.identifier)
            # Verified attachments need verified evidence; claims keep their own weaker level.
            if attached.level is LinkLevel.VERIFIED:
                assert attached.identifier in obs.verified
            else:
                assert attached.identifier in obs.asserted + obs.inferred
        self.support[res.key] = max(self.support.get(res.key, LinkLevel.ANONYMOUS), res.level)

    def counts(self, customer: str | None) -> dict[IdentifierKind, int]:
        if customer is None:
            return {}
        kinds: tuple[IdentifierKind, ...] = ("phone", "email", "telegram", "web_account")
        return {kind: self.graph.identifier_count(customer, kind) for kind in kinds}

    @rule(phone=st.sampled_from(PHONES), claims=stated)
    def whatsapp(self, phone: str, claims: list[str]) -> None:
        self.message(WhatsAppSender(f"whatsapp:{phone}"), claims)

    @rule(
        visitor=st.sampled_from(VISITORS),
        sub=st.sampled_from(SUBS),
        phone=st.sampled_from(PHONES),
        email=st.sampled_from(EMAILS),
        flags=st.tuples(st.booleans(), st.booleans()),
        token_kind=st.sampled_from(["valid", "valid", "none", "forged", "expired"]),
        claims=stated,
    )
    def webchat(
        self,
        visitor: str,
        sub: str,
        phone: str,
        email: str,
        flags: tuple[bool, bool],
        token_kind: str,
        claims: list[str],
    ) -> None:
        token = None
        if token_kind != "none":
            contact = {
                "phone_number": phone,
                "phone_number_verified": flags[0],
                "email": email,
                "email_verified": flags[1],
            }
            token = mint(
                sub, contact, forged=token_kind == "forged", expired=token_kind == "expired"
            )
        verified = verify_identity_token(token, SECRET, now=NOW)
        assert (verified is not None) == (token_kind == "valid")
        self.message(WebChatVisitor(visitor, verified), claims)

    @precondition(lambda self: bool(self.graph.customers))
    @rule(data=st.data())
    def new_account_proving_known_identifiers(self, data: st.DataObject) -> None:
        # Aims at the rare states: a fresh account whose verified phone and e-mail may already
        # belong to two different customers.
        held = {
            identifier
            for customer in self.graph.customers
            for identifier, level in self.graph.identifiers(customer).items()
            if level is LinkLevel.VERIFIED
        }
        phones = sorted(i.value for i in held if i.kind == "phone") or PHONES
        emails = sorted(i.value for i in held if i.kind == "email") or EMAILS
        self.fresh += 1
        contact = {
            "phone_number": data.draw(st.sampled_from(phones)),
            "phone_number_verified": True,
            "email": data.draw(st.sampled_from(emails)),
            "email_verified": True,
        }
        token = mint(f"fresh-{self.fresh}", contact, forged=False, expired=False)
        self.message(WebChatVisitor("v-fresh", verify_identity_token(token, SECRET, now=NOW)), [])

    @rule(user=st.sampled_from(TELEGRAM), claims=stated)
    def telegram(self, user: int, claims: list[str]) -> None:
        self.message(TelegramSender(user), claims)

    @rule(user=st.sampled_from(TELEGRAM), phone=st.sampled_from(PHONES), own=st.booleans())
    def telegram_contact(self, user: int, phone: str, own: bool) -> None:
        contact_user = user if own else user + 1
        self.message(TelegramContactShare(user, phone.lstrip("+"), contact_user), [])

    @rule(
        call=st.integers(min_value=1, max_value=5),
        caller=st.sampled_from([*PHONES, None]),
        data=st.data(),
        claims=stated,
    )
    def phone_call(
        self, call: int, caller: str | None, data: st.DataObject, claims: list[str]
    ) -> None:
        hints = [None, "ghost", *sorted(self.graph.customers)]
        hint = data.draw(st.sampled_from(hints))
        self.message(PhoneCall(f"CA{call}", caller=caller, customer_id=hint), claims)

    # Operator actions

    def owning_customers(self) -> list[str]:
        return sorted(c for c in self.graph.customers if self.graph.identity_keys(c))

    @precondition(lambda self: len(self.owning_customers()) >= 2)
    @rule(data=st.data())
    def merge(self, data: st.DataObject) -> None:
        customers = self.owning_customers()
        source = data.draw(st.sampled_from(customers))
        target = data.draw(st.sampled_from([c for c in customers if c != source]))
        moved = set(self.graph.identity_keys(source))
        audit = self.graph.merge(source, target, actor="op", reason="test")
        assert set(audit.identity_keys) == moved
        assert source not in self.graph.customers

    @precondition(
        lambda self: any(len(self.graph.identity_keys(c)) >= 2 for c in self.graph.customers)
    )
    @rule(data=st.data())
    def split(self, data: st.DataObject) -> None:
        customer = data.draw(
            st.sampled_from(
                sorted(c for c in self.graph.customers if len(self.graph.identity_keys(c)) >= 2)
            )
        )
        keys = self.graph.identity_keys(customer)
        chosen = data.draw(
            st.lists(st.sampled_from(keys), min_size=1, max_size=len(keys) - 1, unique=True)
        )
        self.graph.split(customer, chosen, actor="op", reason="test")
        assert set(self.graph.identity_keys(customer)) == set(keys) - set(chosen)

    @precondition(lambda self: len(self.owning_customers()) >= 2)
    @rule(data=st.data())
    def merge_then_split_restores(self, data: st.DataObject) -> None:
        customers = self.owning_customers()
        source = data.draw(st.sampled_from(customers))
        target = data.draw(st.sampled_from([c for c in customers if c != source]))
        before = self.graph.ownership()
        levels = {key: self.graph.identity(key) for key in self.support}
        audit = self.graph.merge(source, target, actor="op", reason="test")
        self.graph.split(
            target, audit.identity_keys, actor="op", reason="undo", new_customer_id=source
        )
        assert self.graph.ownership() == before
        assert {key: self.graph.identity(key) for key in self.support} == levels

    @precondition(lambda self: bool(self.graph.pending))
    @rule(data=st.data())
    def confirm_pending(self, data: st.DataObject) -> None:
        link = data.draw(st.sampled_from(self.graph.pending))
        self.graph.confirm(link, actor="op", reason="confirmed by phone")
        owner = self.graph.identity(link.identity_key)
        assert owner is not None and owner.customer_id == link.candidate_customer
        self.support[link.identity_key] = LinkLevel.VERIFIED  # operator confirmation

    @precondition(lambda self: bool(self.graph.pending))
    @rule(data=st.data())
    def reject_pending(self, data: st.DataObject) -> None:
        link = data.draw(st.sampled_from(self.graph.pending))
        self.graph.reject(link)
        assert link not in self.graph.pending

    # Invariants

    @invariant()
    def records_stay_with_the_identity_they_came_from(self) -> None:
        for record in self.graph.records():
            source = self.graph.identity(record.source)
            assert source is not None and source.customer_id == record.customer_id
            assert record.customer_id in self.graph.customers

    @invariant()
    def stored_levels_never_exceed_the_evidence(self) -> None:
        for key, supported in self.support.items():
            link = self.graph.identity(key)
            assert link is not None and link.level <= supported

    @invariant()
    def blocked_values_are_never_linked(self) -> None:
        for customer in self.graph.customers:
            assert not any(DEFAULT_BLOCKED.is_blocked(i) for i in self.graph.identifiers(customer))
        for link in self.graph.pending:
            assert not DEFAULT_BLOCKED.is_blocked(link.via)
            assert not DEFAULT_BLOCKED.is_blocked_key(link.identity_key)

    @invariant()
    def a_verified_identifier_belongs_to_one_customer(self) -> None:
        owners: dict[object, str] = {}
        for customer in sorted(self.graph.customers):
            for identifier, level in self.graph.identifiers(customer).items():
                if level is LinkLevel.VERIFIED:
                    assert owners.setdefault(identifier, customer) == customer

    @invariant()
    def pending_links_point_elsewhere(self) -> None:
        for link in self.graph.pending:
            owner = self.graph.identity(link.identity_key)
            assert owner is not None and owner.customer_id != link.candidate_customer
            assert link.candidate_customer in self.graph.customers


class MergingNamedCustomerMachine(LinkingMachine):
    """The same, for a tenant whose call center's verification suffices to merge."""

    named_customer: NamedCustomerPolicy = "merge"


for machine in (LinkingMachine, MergingNamedCustomerMachine):
    machine.TestCase.settings = settings(
        max_examples=100,
        stateful_step_count=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
TestLinking = LinkingMachine.TestCase
TestLinkingWhenTheCallCenterMerges = MergingNamedCustomerMachine.TestCase
