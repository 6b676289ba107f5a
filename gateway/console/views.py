"""Server-rendered console pages (escape-by-default HTML; the conversations pages add one
same-origin script that keeps them live)."""

from __future__ import annotations

from gateway.console.views_conversations import conversation_page, conversations_page
from gateway.console.views_inbox import inbox_page
from gateway.console.views_layout import (
    action_form,
    audit_page,
    csrf,
    error_page,
    login_page,
    page,
    reason_field,
    search_page,
)
from gateway.console.views_preview import budget_bar, preview_page
from gateway.console.views_profile import message_page, message_text, profile_page
from gateway.console.views_traces import trace_diff

__all__ = [
    "action_form",
    "audit_page",
    "budget_bar",
    "conversation_page",
    "conversations_page",
    "csrf",
    "error_page",
    "inbox_page",
    "login_page",
    "message_page",
    "message_text",
    "page",
    "preview_page",
    "profile_page",
    "reason_field",
    "search_page",
    "trace_diff",
]
