"""Resources as the API shows them: the public representation, one module per resource.

A resource's JSON is part of the contract, and two layers render it: the HTTP layer in its
responses, and the actors in the events they commit to the outbox, in the same transaction as the
change they report (an event's `data.object` is the resource as the API shows it, so a webhook
consumer and an API client see the same thing). It is not a domain rule (the domain knows nothing
of camelCase, amounts as strings or the public URL), so it lives here, beside storage and below
both: these modules take domain values (or a row, as a mapping) and depend on `mps.domain` only.
A store never renders JSON: the actor renders an event's body and hands it to the store. The
contracts in pyproject.toml ([tool.importlinter]) hold both directions.
"""
