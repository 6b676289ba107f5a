"""Provider webhooks acknowledged by one group-committed row each (`writer`), stored as messages
in the background (`processor`), one sender's messages in order."""
