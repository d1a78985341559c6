"""Credentials at the edge: session tokens, API keys, the keyring (hashing and sealing) and
resolving a request's credential to its principal (decisions 1, 2, 3). Below the actors, which
seal and mint with it; the sign-in use cases, which ask the actors, are `mps.http.signin`."""
