from __future__ import annotations

import pytest

from context.compaction.identifiers import (
    is_cnpj,
    is_cpf,
    mask_identifiers,
    normalize_cep,
    normalize_cnpj,
    normalize_cpf,
    normalize_email,
    normalize_phone,
    normalize_uuid,
)


@pytest.mark.parametrize(
    "text", ["123.456.789-09", "12345678909", "529.982.247-25", "111.444.777-35"]
)
def test_valid_cpfs(text: str) -> None:
    assert is_cpf(text)


@pytest.mark.parametrize(
    "text", ["123.456.789-00", "111.111.111-11", "00000000000", "1234567890", "123456789091"]
)
def test_invalid_cpfs(text: str) -> None:
    assert not is_cpf(text)


@pytest.mark.parametrize("text", ["11.222.333/0001-81", "11222333000181", "45.723.174/0001-10"])
def test_valid_cnpjs(text: str) -> None:
    assert is_cnpj(text)


@pytest.mark.parametrize("text", ["11.222.333/0001-82", "11.111.111/1111-11", "1122233300018"])
def test_invalid_cnpjs(text: str) -> None:
    assert not is_cnpj(text)


def test_documents_normalize_to_digits() -> None:
    assert normalize_cpf("123.456.789-09") == "12345678909"
    assert normalize_cpf("123.456.789-08") is None
    assert normalize_cnpj("11.222.333/0001-81") == "11222333000181"


@pytest.mark.parametrize(
    ("raw", "e164"),
    [
        ("(11) 98765-4321", "+5511987654321"),
        ("11 98765-4321", "+5511987654321"),
        ("+55 11 98765-4321", "+5511987654321"),
        ("11987654321", "+5511987654321"),
        ("+1 415 555 0100", "+14155550100"),
    ],
)
def test_phones_normalize_to_e164(raw: str, e164: str) -> None:
    assert normalize_phone(raw) == e164


def test_phone_region_reads_numbers_without_country_code() -> None:
    assert normalize_phone("415 555 0100", "US") == "+14155550100"
    assert normalize_phone("12345678901") is None
    assert normalize_phone("4471") is None


def test_cep_email_uuid_normalization() -> None:
    assert normalize_cep("01310100") == "01310-100"
    assert normalize_cep("01310-10") is None
    assert normalize_email(" Ana.Souza@Example.COM. ") == "ana.souza@example.com"
    assert normalize_email("ana@") is None
    assert normalize_uuid("123E4567-E89B-42D3-A456-556642440000") == (
        "123e4567-e89b-42d3-a456-556642440000"
    )


def test_mask_identifiers_replaces_values_with_placeholders() -> None:
    text = (
        "meu email é ana@example.com, CPF 123.456.789-09, fone (11) 98765-4321, "
        "CEP 01310-100, chave 123e4567-e89b-42d3-a456-556642440000, pedido PED-4471"
    )
    masked = mask_identifiers(text, [("PED-4471", "order_id")])
    assert masked == (
        "meu email é [email], CPF [document], fone [phone], CEP [postal_code], "
        "chave [pix_key], pedido [order_id]"
    )


def test_mask_identifiers_leaves_ordinary_numbers() -> None:
    text = "I ran 5 miles in 2023, 12345678901 is not a CPF, 2023 2024 were good years"
    assert mask_identifiers(text) == text
