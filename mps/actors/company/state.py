"""What a company actor holds, and what it was given: the state its handlers take.

Each handler is a plain function of this state and one command, run in the actor's turn. It
decides from memory, holds what it decided (so the next command is decided against it), and
returns the commit as detached work; should the commit fail, what it held is undone
(mps.actors.commits), so a command that fails leaves the state as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from mps.actors.context import ActorContext
from mps.actors.references import References
from mps.actors.runtime import Reload
from mps.auth.keyring import Keyring
from mps.domain.approvals import ApprovalRequest, Policy
from mps.domain.audit import AuditHead
from mps.domain.company import Company
from mps.domain.ledger import Books
from mps.domain.payouts import BankAccount, Payout
from mps.domain.scopes import Role
from mps.errors import NotFound, Unavailable
from mps.persistence.statements import Row

__all__ = ["CompanyState", "require_fresh"]


@dataclass
class CompanyState:
    company_id: str
    context: ActorContext
    keyring: Keyring
    # The base of payUrl in the payment views that events carry.
    public_url: str
    references: References
    # None until created (or when the company does not exist).
    company: Company | None = None
    # user id -> role id: who may open a session, decided without a read.
    members: dict[str, str] = field(default_factory=dict)
    # The company's custom roles (the built-in ones are mps.domain.scopes').
    roles: dict[str, Role] = field(default_factory=dict)
    # mode -> webhook endpoints, once a create told us (mps.actors.company.webhooks).
    endpoint_counts: dict[str, int] = field(default_factory=dict)
    # The company's balances (mps.domain.ledger), loaded at activation; this actor alone
    # writes its ledger.
    books: Books = field(default_factory=Books)
    # A commit of the books, a payout or an invoice number whose outcome is unknown (the writer
    # missed its deadline): memory may differ from storage, so the next command that decides
    # from it reloads the actor (mps.actors.company.ledger.require_fresh).
    stale: bool = False
    # Credits whose settlement is in flight, so a second pass does not settle them again.
    settling: set[str] = field(default_factory=set)
    # Bank accounts not deleted, and payouts PENDING or IN_TRANSIT, of both modes.
    bank_accounts: dict[str, BankAccount] = field(default_factory=dict)
    payouts: dict[str, Payout] = field(default_factory=dict)
    # mode -> the due time of the last automatic payout run handled, so a pass that read the
    # schedule before that run's commit landed does not run it twice.
    schedule_runs: dict[str, str] = field(default_factory=dict)
    # mode -> the last automatic invoice number handed out, and numbers handed out whose
    # invoice was refused (given again first, so the sequence has no gap).
    invoice_numbers: dict[str, int] = field(default_factory=dict)
    returned_numbers: dict[str, list[int]] = field(default_factory=dict)
    # The end of the company's audit chain in memory, units in flight included; the entry the
    # next unit's insert requires to be stored (the first of the unit linked last; None: the
    # head itself, as loaded); the generation, moved on when a refused unit rewinds the head;
    # and how many audited units are in flight (mps.actors.company.audit).
    audit_head: AuditHead = field(default_factory=AuditHead)
    audit_anchor: AuditHead | None = None
    audit_generation: int = 0
    audit_in_flight: int = 0
    # Approval policies by action, and the open (PENDING or APPROVED) requests.
    policies: dict[str, Policy] = field(default_factory=dict)
    approvals: dict[str, ApprovalRequest] = field(default_factory=dict)
    # How long the bank takes to pick a payout up, and then to pay it (mps.config).
    payout_transit_after: float = 2.0
    payout_arrival_after: float = 2.0

    def mark_stale(self) -> None:
        """A commit's outcome is unknown (mps.actors.commits): reload before deciding again."""
        self.stale = True

    def hold_company(self, before: Company, after: Company) -> Callable[[], None]:
        """Hold `after` (committed as `before`'s next version) from now on, so the next command
        is decided against it; the undo for its commit. Should a later decision have been built
        on it meanwhile, its versioned write will be refused too, and memory cannot be put back
        one step: the actor reloads instead (stale)."""
        held = replace(after, version=before.version + 1)
        self.company = held

        def undo() -> None:
            if self.company is held:
                self.company = before
            else:
                self.mark_stale()

        return undo

    def hold_member(self, rows: list[list[Row]], role_id: str) -> str:
        """Hold the member a committed unit made (its last statement, a membership's, returns
        the user's id: a new user, or the account the email had already) from now on, so a
        message sent after the reply finds them; their user id."""
        user_id: str = rows[-1][0]["user_id"]
        self.members[user_id] = role_id
        return user_id

    def require(self) -> Company:
        if self.company is None:
            raise NotFound("No such company")
        return self.company


def require_fresh(state: CompanyState) -> None:
    """Raise unless what the actor holds (books, payouts, invoice numbers, the audit head) may
    be trusted for a decision: 503 while commits of the books are in flight after a fault, then
    a reload (mps.actors.commits). The fresh incarnation loads only once this one's task has
    ended, which waits for every write still running that held one of its units
    (mps.actors.runtime.hold_until), so it never reads storage that write may yet change."""
    if not state.stale:
        return
    if state.books.in_flight:
        msg = "The balance is being checked after a database fault; retry shortly"
        raise Unavailable(msg, retry_after=1)
    msg = "a commit of unknown outcome"
    raise Reload(msg)
