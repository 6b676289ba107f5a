"""HTTP handlers of the JSON API (`/v1/*`, operator API)."""
