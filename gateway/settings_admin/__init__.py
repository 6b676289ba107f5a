"""Tenant settings managed without SQL: one level at a time (`levels`), as documents with
dotted keys (`documents`, pure), validated, written with an audit entry and announced to every
process (`service`, `announcements`); the JSON Schema (`schema`), files (`files`) and the
`relaydesk settings` command (`cli`). `/v1/settings` is `gateway.api.settings`."""
