"""The message flow: accept, answer, deliver; scheduler; window assembly; calls, voice notes."""
