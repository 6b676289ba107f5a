"""The operator console: server-rendered `/console` pages (`routes`, `views*`, `html`), the
live conversations' change stream, static files, and the console's cookies and form CSRF
(`cookies`).

Accounts, logins and every action an operator takes are `gateway.operators`, shared with the
operator JSON API. The console is a leaf: nothing imports it but `gateway.app`, which adds its
routes.
"""
