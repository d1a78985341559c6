"""Resources as the API shows them: the public representation, one module per resource.

A resource's JSON is part of the contract, and two layers render it: the HTTP layer in its
responses, and the persistence layer in the events it writes to the outbox, in the same
transaction as the change they report (an event's `data.object` is the resource as the API shows
it, so a webhook consumer and an API client see the same thing). Neither layer may own it without
the other depending on it (storage must not import HTTP), and it is not a domain rule (the domain
knows nothing of camelCase, amounts as strings or the public URL), so it lives here, below both:
these modules depend on `mps.domain` only, and `mps.http` and `mps.persistence` both import them.
"""
