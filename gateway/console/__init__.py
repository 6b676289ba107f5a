"""The operator console: `/console` pages (`routes`, `views`), accounts and logins (`auth`),
the actions on storage (`service`, `rebuild`) and their refusals (`errors`).

The operator JSON API under `/v1/operator` is `gateway.api.operator`; it uses this package,
which never imports it back. Nothing is imported here, so `gateway.http` can use `auth` and
`errors` without a cycle.
"""
