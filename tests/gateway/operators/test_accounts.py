"""Operator accounts: salted scrypt hashes, and the accounts `create_operator` refuses."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.http.errors import Conflict
from gateway.operators.accounts import OperatorAccountError, create_operator
from gateway.operators.passwords import DUMMY_HASH, hash_password, verify_password
from gateway.storage.models import Operator


def test_password_hash_is_salted_scrypt_and_verifies() -> None:
    first, second = hash_password("s3cret-passw0rd"), hash_password("s3cret-passw0rd")
    assert first != second and first.startswith("scrypt$16384$8$1$")
    assert "s3cret" not in first
    assert verify_password("s3cret-passw0rd", first)
    assert not verify_password("s3cret-passw0rd!", first)
    assert not verify_password("s3cret-passw0rd", "md5$abc")
    assert not verify_password("s3cret-passw0rd", "garbage")


def test_the_same_salt_gives_the_same_hash_and_nothing_matches_the_dummy() -> None:
    salt = bytes(16)
    assert hash_password("a password", salt=salt) == hash_password("a password", salt=salt)
    assert not verify_password("", DUMMY_HASH)
    assert not verify_password("a password", DUMMY_HASH)


async def test_accounts_refuse_bad_names_short_passwords_and_duplicates(
    session: AsyncSession,
) -> None:
    operator_id = await create_operator(session, "  ana.ops ", "correct horse battery")
    with pytest.raises(OperatorAccountError, match="at least 10"):
        await create_operator(session, "bob", "short")
    with pytest.raises(OperatorAccountError, match="without spaces"):
        await create_operator(session, "bob smith", "long enough password")
    with pytest.raises(OperatorAccountError):
        await create_operator(session, "   ", "long enough password")
    with pytest.raises(Conflict) as refused:
        await create_operator(session, "ana.ops", "another long password")
    assert (refused.value.status, refused.value.code) == (409, "conflict")
    rows = list(await session.scalars(select(Operator)))
    assert [(row.id, row.username) for row in rows] == [(operator_id, "ana.ops")]
    assert verify_password("correct horse battery", rows[0].password_hash)
