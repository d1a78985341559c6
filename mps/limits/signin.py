"""Sign-in rate limits (decisions 15): tight in production, relaxed in development.

`signin_per_ip`, `otp_request` (per loginId) and `otp_verify` (per loginId) are route limits,
counted on each node (`RateLimiter`, mps.limits.local). The two per-email limits are one
person's budget whichever route or login is used, and are counted by the shared limiter
(`SharedLimiter`, mps.limits.shared), so they hold across the nodes of a cluster:

- `codes_per_email`: codes mailed to one address (sign-up, login, a fresh code, an accepted
  invitation), decisions 15's "OTP request, per email";
- `code_guesses_per_email`: tries at a code for one address, over all its logins, on top of
  the 5 wrong tries each login allows.
"""

from __future__ import annotations

from dataclasses import dataclass

from mps.limits.windows import Limit

__all__ = ["AuthLimits", "auth_limits"]


@dataclass(frozen=True)
class AuthLimits:
    signin_per_ip: Limit
    otp_request: Limit
    otp_verify: Limit
    codes_per_email: Limit
    code_guesses_per_email: Limit


def auth_limits(development: bool) -> AuthLimits:
    return AuthLimits(
        signin_per_ip=Limit("signin", 200 if development else 10, 15 * 60),
        otp_request=Limit("otp-request", 100 if development else 10, 5 * 60),
        otp_verify=Limit("otp-verify", 200 if development else 20, 5 * 60),
        codes_per_email=Limit("signin-codes", 100 if development else 10, 5 * 60),
        code_guesses_per_email=Limit("signin-guesses", 100 if development else 10, 15 * 60),
    )
