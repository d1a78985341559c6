"""What outbound webhooks are made of, apart from the actors that run them: signatures
(`signing`), safe targets (`targets`), the signed POST of one attempt (`sender`) and the
broker's routing keys and messages (`topology`).

The rest of the capability lives in the layer its part belongs to (docs/architecture.md, the
"Webhooks" row): the relay, fan-out and dispatcher in mps.actors.webhooks, the endpoint commands
in mps.actors.company.webhooks, the rules in mps.domain.webhooks, the rows in
mps.persistence.webhook_store and mps.persistence.queries.webhooks, the JSON in
mps.representations.webhooks, the routes in mps.http.routes.webhooks and `mps listen` in
mps.cli.listen. This package imports none of them: it sits on the edges' layer, over the domain.

Merchants' receivers may import `mps.webhooks.verify_signature` to check a delivery's
`X-Service-Signature` header; it needs nothing but the standard library (this module imports
`signing` only, never `sender` or `targets`, which need aiohttp).
"""

from mps.webhooks.signing import SignatureError, sign, verify_signature

__all__ = ["SignatureError", "sign", "verify_signature"]
