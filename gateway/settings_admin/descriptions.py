"""One line on what each tenant setting does, for the JSON Schema (`schema.py`), the generated
configuration reference and the console. A test fails when a setting has none."""

from __future__ import annotations

from typing import Final

DESCRIPTIONS: Final[dict[str, str]] = {
    "instruction": "the system instruction every window starts with",
    "window": "tokens of the window sent to the model",
    "output_reserve": "tokens of the window kept free for the reply",
    "protocol_margin": "tokens kept for the provider's message framing",
    "slices": (
        "token budgets of the window's parts (instruction, state, facts, knowledge, summaries, "
        "current episode); unset: shared out automatically; knowledge 0: no documents"
    ),
    "threshold_tokens": "an episode's unsummarized tokens past which compaction runs",
    "low_water_tokens": (
        "what compaction brings an episode's unsummarized tokens down to (below threshold_tokens)"
    ),
    "keep_recent_turns": "turns compaction always leaves verbatim",
    "max_input_chars": "longest customer message accepted, in characters",
    "max_single_message_tokens": "a message longer than this is cut for the window",
    "truncated_message_target_tokens": (
        "what a cut message is cut to (below max_single_message_tokens)"
    ),
    "episode_idle_minutes": "silence after which the next message starts a new episode",
    "model": (
        "the model of this tenant's replies (`openai:<model>`, `anthropic:<model>`); unset: the"
        " deployment's"
    ),
    "summary_model": "the model that writes summaries; unset: the reply model",
    "summary_provider": "the provider of summary_model; unset: the reply model's",
    "model_tiers": "models chosen by the window's size: `[{max_window_tokens, model}, …]`",
    "fallback_message": (
        "what the customer is told when the model failed for good; unset: a built-in text in "
        "the customer's language (Portuguese, English or Spanish)"
    ),
    "model_max_in_flight": (
        "this tenant's model calls waiting at once, per process; unset: no tenant limit"
    ),
    "model_requests_per_minute": (
        "this tenant's model calls started per minute, per process; unset: no tenant limit"
    ),
    "scope_policy": "which fact scopes reach the window at each link level",
    "link_limits": "how many customers one identifier may link, per kind",
    "blocked_values": "identifier values never used for linking (shared numbers, test e-mails)",
    "call_center_customer": (
        "a call the call center names a customer for, from another customer's caller id: "
        "`propose` a merge to an operator or `merge` at once"
    ),
    "handoff_phrases": (
        "what a customer says to ask for a person (whole words; case and accents ignored)"
    ),
    "handoff_marker": "the marker the model writes to hand over (stripped from what is sent)",
    "handoff_after_failures": (
        "failed model calls in a row that hand the conversation over (0: never)"
    ),
    "handoff_message": (
        "what the customer is told when a person is called; unset: a built-in text in the "
        "customer's language (Portuguese, English or Spanish)"
    ),
    "handoff_waiting_alert_s": (
        "seconds a conversation may wait for an operator before it is flagged"
    ),
    "csat_enabled": (
        "ask the satisfaction question (1-5) once per episode after a hand-back or an idle close"
    ),
    "csat_question": "the satisfaction question, with its 1-5 choices",
    "csat_thanks": "what the customer is told after answering the satisfaction question",
    "csat_template": (
        "one of `whatsapp_templates` with the 1-5 choices, sent on Twilio's WhatsApp (a Content "
        "template with quick replies or a list); unset: the question goes as text"
    ),
    "whatsapp_templates": (
        "approved WhatsApp templates by name: `content_sid` (Twilio) or `name` (Cloud API), "
        "`language`, `variables`"
    ),
    "outside_window_template": (
        "the template sent instead of a reply due outside WhatsApp's 24-hour window; unset: "
        "such a reply waits for an operator"
    ),
    "canned_replies": (
        "the console's canned replies: `shortcut` (typed after `/` in the reply box) and `text`, "
        "its `{name}`-style placeholders filled from the customer's facts of that key"
    ),
    "media_hosts": (
        "hosts the model's media markers may attach files from (`cdn.example.org`, `*.example.org`)"
    ),
    "retention_days": "messages and transcripts older than this are deleted; unset: kept",
    "retention_covers_memory": (
        "retention also deletes the facts and summaries drawn from deleted messages"
    ),
    "rate_limits": (
        "rates of the public doors in the `limits` notation (`60/hour`), or null for none"
    ),
    "tools": "business endpoints the model may call",
    "mcp_servers": "MCP servers whose tools the model may call",
    "max_tool_rounds": "rounds of tool calls in one turn before the answer",
    "max_result_tokens": "tokens of one tool result the window keeps",
    "tool_results_tokens": "room the window keeps for all of a turn's tool results",
    "tool_turn_budget_s": "seconds all of a turn's tool calls may take",
    "state_endpoint": (
        "the business's endpoint for a conversation's operational state, called before the window"
    ),
    "state_timeout_ms": "how long the window waits for state_endpoint",
    "verification": (
        "step-up codes: lifetime, the texts sent, the WhatsApp template outside the window"
    ),
    "confirmation_ttl_s": "seconds a write waits for the customer's confirmation",
    "confirmation_message": "the question a write asks (`{action}`, `{values}`)",
    "approval_ttl_s": "seconds a write waits for an operator's approval",
    "approval_message": (
        "what the customer is told of a write sent for approval (`{action}`, `{values}`)"
    ),
    "channels": (
        "per-channel blocks of these keys (`channels.whatsapp.window`), applied after every level"
    ),
}
