"""Actions the model may call: business endpoints and MCP servers, bound to the conversation's
customer by a signed identity assertion, offered by link level, writes confirmed first."""
