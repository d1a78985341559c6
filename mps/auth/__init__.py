"""Sign-in, sessions, API keys, scopes and roles (decisions 1, 2, 3)."""
