"""What outbound webhooks are made of: signatures (`signing`) and safe targets (`targets`).

Merchants' receivers may import `mps.webhooks.verify_signature` to check a delivery's
`X-Service-Signature` header; it needs nothing but the standard library.
"""

from mps.webhooks.signing import SignatureError, sign, verify_signature

__all__ = ["SignatureError", "sign", "verify_signature"]
