"""Customer satisfaction: one question (1-5) asked after a conversation was handed back to the
bot or closed by idle time, and its answer."""
