"""A tenant reference's stored spelling: stable, readable for plain hosts, and read back as
the same reference whatever the host holds."""

from __future__ import annotations

import pytest

from gateway.tenant_ref import DEFAULT_TENANT, DEFAULT_TENANT_ENCODED, TenantRef


def test_the_default_tenant_is_stored_as_the_default_domain() -> None:
    assert DEFAULT_TENANT_ENCODED == "default"
    assert TenantRef.decode("default") == DEFAULT_TENANT


@pytest.mark.parametrize(
    ("ref", "encoded"),
    [
        (TenantRef.for_host("shop.example.com:8443"), "default/shop.example.com:8443"),
        (TenantRef.for_host("odd/host%2F"), "default/odd%2Fhost%252F"),
        (TenantRef(assistant_id="sales"), "default//sales"),
        (TenantRef("acme.com", "chat.acme.com", "sales"), "acme.com/chat.acme.com/sales"),
    ],
)
def test_a_reference_reads_back_as_itself(ref: TenantRef, encoded: str) -> None:
    assert ref.encode() == encoded
    assert TenantRef.decode(encoded) == ref


def test_an_empty_host_is_no_host() -> None:
    assert TenantRef.for_host("") == DEFAULT_TENANT
    assert TenantRef.for_host(None).encode() == "default"


@pytest.mark.parametrize("bad", ["", "/shop.example.com", "a/b/c/d"])
def test_what_is_not_a_reference_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        TenantRef.decode(bad)
