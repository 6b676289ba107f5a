"""Benchmarks, the LoCoMo evaluation and the demo: tools around the product, reached as
`relaydesk bench|eval|demo`."""
