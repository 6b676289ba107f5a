"""The web chat: websocket and REST routes, hub, cross-process fan-out, frames, widget page."""
