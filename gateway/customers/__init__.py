"""Customers against storage: identity resolution, channel evidence, operator actions."""
