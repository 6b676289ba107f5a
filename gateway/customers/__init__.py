"""Customers against storage: identity resolution, channel evidence, operator actions, and the
export and erasure of a customer's data (with what every process must forget afterwards)."""
