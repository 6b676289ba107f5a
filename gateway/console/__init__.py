"""The operator console: `/console` pages (`routes`, `views`), the operator JSON API additions
(`api`), accounts and logins (`auth`) and the actions on storage (`service`).

Nothing is imported here, so `gateway.api.operator` can use `gateway.console.auth` without a
cycle; `gateway.app` registers `routes` and `api`.
"""
