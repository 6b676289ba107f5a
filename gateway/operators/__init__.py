"""Operators: their accounts and logins, and the actions they take on stored customers.

Both operator front ends use this package: the console's pages (`console/`) and the
operator JSON API under `/v1/operator` (`gateway.api`). Neither is imported here.

- `passwords`: salted scrypt hashes; `accounts`: `create_operator`.
- `logins`: a login's cookie token, `attempt_login` behind the `throttle` (attempts counted
  before the check by `attempts` / `attempts_redis`), `current_login`.
- `actor`: `operator_actor`, who calls the operator API (API key or login plus CSRF header).
- `reasons`: the reason every audited action needs.
- `search`, `facts` (corrections, pins, retractions), `preview`, `rebuild`, `set_aside`
  (inbox retries), `profile` (everything stored about one customer), `customer_data`.

Refusals are `gateway.http.errors` (e.g. `BadRequest` with code `reason_required`); rows that
are not there raise the storage layer's `RecordNotFound`. Nothing is imported here, so
`gateway.http` can use `actor` without a cycle.
"""
