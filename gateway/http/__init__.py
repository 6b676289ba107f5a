"""HTTP plumbing: middleware, errors, bodies, auth, idempotency, health, OpenAPI, webhooks."""
