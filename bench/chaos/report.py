"""What a run found: the counts it kept, its violations, and the summary table printed at the
end. Filled in by every part of the suite from one event loop, so nothing here locks."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.chaos.options import Options


@dataclass
class Violation:
    """One broken check: which check, what broke, and the evidence (answers, log lines)."""

    check: str
    detail: str
    evidence: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"[{self.check}] {self.detail}", *(f"    {e}" for e in self.evidence)]
        return "\n".join(lines)


@dataclass
class Report:
    """A run's outcome; `violations` is empty when every check held."""

    options: Options
    out: Path
    operations: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    faults_missed: Counter[str] = field(default_factory=Counter)
    fault_log: list[str] = field(default_factory=list)
    # (method route, status) -> count; status 0: no answer (refused, reset, timed out).
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    acknowledged: Counter[str] = field(default_factory=Counter)
    events_listed: int = 0
    events_delivered: int = 0
    deliveries: int = 0
    violations: list[Violation] = field(default_factory=list)
    # The last line of each traceback in the nodes' logs, with how often it appeared.
    log_errors: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def violate(self, check: str, detail: str, *evidence: str) -> None:
        self.violations.append(Violation(check, detail, list(evidence)))

    @property
    def server_errors(self) -> int:
        """Answers with a 5xx other than 503 (a 503 is the service shedding load, not failing)."""
        return self._answers(lambda status: status >= 500 and status != 503)

    def _answers(self, matches: Callable[[int], bool]) -> int:
        return sum(n for (_, status), n in self.statuses.items() if matches(status))

    def summary(self) -> str:
        o = self.options
        rows = [
            ("run", f"{o.nodes} nodes, {self.seconds:.0f} s, seed {o.seed}, out {self.out}"),
            ("operations", _counts(self.operations)),
            ("faults injected", _counts(self.faults) or "none"),
            ("faults not injected", _counts(self.faults_missed) or "none"),
            ("acknowledged writes", _counts(self.acknowledged)),
            ("events listed", str(self.events_listed)),
            ("events delivered", f"{self.events_delivered} ({self.deliveries} deliveries)"),
            ("500s", str(self.server_errors)),
            ("503s", str(self._answers(lambda status: status == 503))),
            ("no answer", str(self._answers(lambda status: status == 0))),
            ("violations", str(len(self.violations))),
        ]
        width = max(len(k) for k, _ in rows)
        lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
        lines.append("statuses by route:")
        by_route: dict[str, Counter[int]] = defaultdict(Counter)
        for (route, status), n in self.statuses.items():
            by_route[route][status] += n
        for route in sorted(by_route):
            counts = " ".join(f"{s}:{n}" for s, n in sorted(by_route[route].items()))
            lines.append(f"  {route}  {counts}")
        if self.fault_log:
            lines.append("faults:")
            lines += [f"  {f}" for f in self.fault_log]
        if self.log_errors:
            lines.append("tracebacks in the nodes' logs (last line, count):")
            lines += [f"  {n} x {e}" for e, n in self.log_errors.most_common(20)]
        if self.violations:
            lines.append("VIOLATIONS:")
            lines += [str(v) for v in self.violations]
        return "\n".join(lines)


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(counter.items()))
