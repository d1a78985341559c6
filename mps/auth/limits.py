"""Sign-in rate limits (decisions 15): tight in production, relaxed in development."""

from __future__ import annotations

from dataclasses import dataclass

from mps.limits import Limit

__all__ = ["AuthLimits", "auth_limits"]


@dataclass(frozen=True)
class AuthLimits:
    signin_per_ip: Limit
    otp_request: Limit
    otp_verify: Limit


def auth_limits(development: bool) -> AuthLimits:
    return AuthLimits(
        signin_per_ip=Limit("signin", 200 if development else 10, 15 * 60),
        otp_request=Limit("otp-request", 100 if development else 10, 5 * 60),
        otp_verify=Limit("otp-verify", 200 if development else 20, 5 * 60),
    )
