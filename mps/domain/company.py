"""A company and its per-mode settings (decisions 1, 19), as pure values."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from mps.domain.money import DEFAULT_CURRENCIES

__all__ = ["MODES", "Company", "InMode", "ModeSettings"]

MODES = ("test", "live")


class InMode:
    """A base for whatever belongs to one of a company's modes (a payment, a card, an API key's
    caller): `livemode`, as the API shows the mode."""

    __slots__ = ()
    mode: str

    @property
    def livemode(self) -> bool:
        return self.mode == "live"


@dataclass(frozen=True)
class ModeSettings:
    supported_currencies: tuple[str, ...] = DEFAULT_CURRENCIES
    payout_schedule: str = "manual"
    settlement_delay_sec: int = 0
    default_api_version: str = "v2"
    kyc_status: str = "UNVERIFIED"
    # Whether secret keys of this mode may call the key-eligible /merchant routes (decisions 2,
    # "Server-to-server keys"). Off until the company turns it on.
    api_key_access: bool = False

    @classmethod
    def default_for(cls, mode: str) -> ModeSettings:
        # Live money settles after two days; test money is available at once so the sandbox flows.
        return cls(settlement_delay_sec=172_800 if mode == "live" else 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "supportedCurrencies": list(self.supported_currencies),
            "payoutSchedule": self.payout_schedule,
            "settlementDelaySec": self.settlement_delay_sec,
            "defaultApiVersion": self.default_api_version,
            "kycStatus": self.kyc_status,
            "apiKeyAccess": self.api_key_access,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModeSettings:
        return cls(
            supported_currencies=tuple(data["supportedCurrencies"]),
            payout_schedule=data["payoutSchedule"],
            settlement_delay_sec=data["settlementDelaySec"],
            default_api_version=data["defaultApiVersion"],
            kyc_status=data["kycStatus"],
            # Stored before the setting existed: off, as for every new company.
            api_key_access=bool(data.get("apiKeyAccess", False)),
        )


@dataclass(frozen=True)
class Company:
    id: str
    name: str
    version: int
    created_at: str
    settings: dict[str, ModeSettings] = field(
        default_factory=lambda: {m: ModeSettings.default_for(m) for m in MODES}
    )

    def data_json(self) -> dict[str, Any]:
        return {"settings": {m: s.to_json() for m, s in self.settings.items()}}

    @classmethod
    def from_row(cls, row: dict[str, Any], data: dict[str, Any]) -> Company:
        return cls(
            id=row["id"],
            name=row["name"],
            version=row["version"],
            created_at=row["created_at"],
            settings={m: ModeSettings.from_json(s) for m, s in data["settings"].items()},
        )

    def with_settings(self, mode: str, settings: ModeSettings) -> Company:
        return replace(self, settings={**self.settings, mode: settings})
