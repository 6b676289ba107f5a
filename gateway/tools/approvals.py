"""Writes an operator approves: which ones (`approval: "operator"` on the tool or the MCP
tool's gate), and what the customer is told once an operator decided.

Such a write never asks the customer: it is held for the console, where an operator approves
it (sent once, as a confirmed write) or rejects it; the customer hears the outcome from the
team, as an operator's message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from gateway.tools.settings import McpServerSettings, ToolSettings

__all__ = ["APPROVED_FAILED_MESSAGE", "APPROVED_MESSAGE", "REJECTED_MESSAGE", "needs_operator"]

# `{action}`: the tool's description. Portuguese and English, like the tenant's defaults.
APPROVED_MESSAGE: Final = (
    "Nossa equipe aprovou e concluímos: {action}. "
    "Our team approved your request and it is done: {action}."
)
APPROVED_FAILED_MESSAGE: Final = (
    "Nossa equipe aprovou, mas não conseguimos concluir agora: {action}. "
    "Vamos verificar e retornar. "
    "Our team approved your request, but we could not complete it: {action}. "
    "We will look into it and get back to you."
)
REJECTED_MESSAGE: Final = (
    "Nossa equipe não aprovou: {action}. Nada foi alterado. "
    "Our team did not approve your request: {action}. Nothing was changed."
)


def needs_operator(
    tools: Iterable[ToolSettings], servers: Iterable[McpServerSettings], name: str
) -> bool:
    """Whether the tenant's action ``name`` waits for an operator rather than the customer."""
    for tool in tools:
        if tool.name == name:
            return tool.approval == "operator"
    for server in servers:
        gate = server.tools.get(name)
        if gate is not None:
            return gate.approval == "operator"
    return False
