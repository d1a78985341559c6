"""Request rate limits (decisions 15), all on one machinery.

    windows.py   Limit, Verdict, scaling, the throttled-retry rule, the bounded key table and
                 the fixed window one authority counts (QuotaLedger)
    local.py     RateLimiter: counted on this node (developer key, routes, sign-in routes)
    shared.py    SharedLimiter: the per-user standard limit and the per-email sign-in budgets,
                 held across a cluster by leasing blocks of each key's window from its authority
    signin.py    the sign-in limits' table, tight in production and relaxed in development

Both limiters count a window the same way, because both count in a `QuotaLedger`: the local one
in its own, one request at a time; the shared one in the key's authority's, a lease at a time.
"""

from __future__ import annotations

from mps.limits.local import RateLimiter
from mps.limits.shared import Authority, LocalAuthority, SharedLimiter
from mps.limits.signin import AuthLimits, auth_limits
from mps.limits.windows import Grant, Limit, QuotaLedger, Verdict, scaled, throttled_end

__all__ = [
    "AuthLimits",
    "Authority",
    "Grant",
    "Limit",
    "LocalAuthority",
    "QuotaLedger",
    "RateLimiter",
    "SharedLimiter",
    "Verdict",
    "auth_limits",
    "scaled",
    "throttled_end",
]
