"""The schemas of the company's own account: API keys and their use, members, sessions,
settings, roles, the audit trail, invitations, and approvals with their policies."""

from __future__ import annotations

from mps.http.resources.common import (
    APPROVAL_STATUS,
    EMAIL_ERROR,
    EMAIL_STATUS,
    INVITATION_STATUS,
    KEY_TYPE,
    MODE,
    MONEY,
    NULL_STR,
    TIME,
    named,
)
from mps.http.schema import Anything, Array, Bool, Enum, Int, Map, Obj, Schema, Str

__all__ = [
    "API_KEY",
    "API_KEY_FIELDS",
    "API_KEY_LOG",
    "APPROVAL",
    "APPROVAL_FIELDS",
    "AUDIT_ENTRY",
    "INVITATION",
    "INVITATION_FIELDS",
    "MEMBER",
    "MEMBER_FIELDS",
    "POLICY",
    "ROLE",
    "ROLE_FIELDS",
    "SESSION",
    "SETTINGS",
]

API_KEY_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "name": Str(),
    "type": KEY_TYPE,
    "mode": MODE,
    "livemode": Bool(),
    "scopes": Array(Str()),
    "prefix": Str(),
    "last4": Str(),
    "createdBy": Str(),
    "createdAt": TIME,
    "lastUsedAt": Str(format="date-time", nullable=True),
    "revokedAt": Str(format="date-time", nullable=True),
}


API_KEY = named("ApiKey", API_KEY_FIELDS)


API_KEY_LOG = named(
    "ApiKeyLogEntry",
    {
        "id": Str(),
        "at": TIME,
        "method": Str(),
        "path": Str(),
        "statusCode": Int(),
        "ip": NULL_STR,
        "requestId": Str(),
    },
    answered=False,
)


_USER = Obj(
    {"id": Str(), "email": Str(), "name": NULL_STR, "createdAt": TIME},
    required=["id", "email", "name", "createdAt"],
)


_COMPANY = Obj(
    {"id": Str(), "name": Str(), "createdAt": TIME}, required=["id", "name", "createdAt"]
)


_ROLE = Obj({"id": Str(), "name": Str()}, required=["id", "name"])


MEMBER_FIELDS: dict[str, Schema] = {
    "user": _USER,
    "company": _COMPANY,
    "role": _ROLE,
    "mode": MODE,
    "livemode": Bool(),
}


SESSION: dict[str, Schema] = {"sessionToken": Str(), "expiresAt": TIME, **MEMBER_FIELDS}


SETTINGS: dict[str, Schema] = {
    "name": Str(),
    "mode": MODE,
    "supportedCurrencies": Array(Str()),
    "payoutSchedule": Enum(["manual", "daily", "weekly"]),
    "settlementDelaySec": Int(),
    "defaultApiVersion": Enum(["v1", "v2"]),
    "kycStatus": Enum(["UNVERIFIED", "PENDING", "VERIFIED", "REJECTED"]),
    "apiKeyAccess": Bool(
        description="Whether secret keys of this mode may call the payment, refund, balance, "
        "payout, bank-account, card, customer, invoice and event routes."
    ),
}


ROLE_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "name": Str(),
    "scopes": Array(Str()),
    "builtin": Bool(),
}


ROLE = named("Role", {**ROLE_FIELDS, "memberCount": Int()}, list(ROLE_FIELDS))


MEMBER = named(
    "Member",
    {
        "id": Str(),
        "userId": Str(),
        "email": Str(),
        "name": NULL_STR,
        "roleId": NULL_STR,
        "roleName": NULL_STR,
        "joinedAt": TIME,
    },
)


AUDIT_ENTRY = named(
    "AuditEntry",
    {
        "id": Str(),
        "at": TIME,
        "actor": Obj({"type": Str(), "id": NULL_STR}, required=["type", "id"]),
        "action": Str(),
        "target": Obj({"type": NULL_STR, "id": NULL_STR}, required=["type", "id"]),
        "details": Map(values=Anything()),
        "ip": NULL_STR,
        "requestId": NULL_STR,
        "seq": Int(),
        "prevHash": NULL_STR,
        "hash": Str(),
    },
    required=["id", "at", "actor", "action", "target", "details", "seq", "prevHash", "hash"],
    answered=False,
)


INVITATION_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "email": Str(),
    "roleId": Str(),
    "status": INVITATION_STATUS,
    "invitedBy": Str(),
    "createdAt": TIME,
    "expiresAt": TIME,
    "decidedAt": Str(format="date-time", nullable=True),
    "emailStatus": EMAIL_STATUS,
    "emailError": EMAIL_ERROR,
}


INVITATION = named("Invitation", INVITATION_FIELDS)


APPROVAL_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "action": Str(),
    "status": APPROVAL_STATUS,
    "requestedBy": Str(),
    "requestedByUserId": NULL_STR,
    "payload": Map(values=Anything()),
    "votes": Array(
        Obj(
            {"userId": Str(), "decision": Str(), "comment": NULL_STR, "at": TIME},
            required=["userId", "decision", "comment", "at"],
        )
    ),
    "requiredApprovals": Int(),
    "result": Map(values=Anything(), nullable=True),
    "error": Map(values=Anything(), nullable=True),
    "livemode": Bool(),
    "createdAt": TIME,
    "expiresAt": TIME,
    "decidedAt": Str(format="date-time", nullable=True),
}


APPROVAL = named("Approval", APPROVAL_FIELDS)


POLICY = named(
    "ApprovalPolicy",
    {
        "action": Str(),
        "enabled": Bool(),
        "thresholds": Map(values=MONEY),
        "requiredApprovals": Int(),
    },
)
