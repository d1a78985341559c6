"""What the nodes' logs say: the last line of every traceback, counted in the report, and each
500's traceback quoted in its violation (found by the request id the answer carried). Read
after the nodes stopped, so every log is complete."""

from __future__ import annotations

from bench.chaos.report import Report
from tests.cluster import LocalCluster


def scan_logs(cluster: LocalCluster, report: Report) -> None:
    """The last line of every traceback in the nodes' logs, counted; and each 500's traceback
    (found by its request id) quoted in its violation. A log that cannot be read is passed."""
    logs = {}
    for index, node in enumerate(cluster.nodes):
        try:
            logs[index] = node.log_text()
        except OSError:
            continue
        lines = logs[index].splitlines()
        logged = ""
        for i, line in enumerate(lines):
            if _timestamped(line):
                logged = line
                if "exception was never retrieved" in line and i + 1 < len(lines):
                    # A future or task whose error nobody awaited: a bug however it ended.
                    report.log_errors[f"never retrieved: {lines[i + 1][:160]}"] += 1
            elif line.startswith("Traceback"):
                end = i + 1
                while end < len(lines) and not _timestamped(lines[end]):
                    end += 1
                # The last exception of a chain ("During handling ...") says what escaped.
                last = next(
                    (x for x in reversed(lines[i:end]) if x and not x.startswith((" ", "\t"))),
                    "",
                )
                where = " ".join(logged.split()[2:4])[:90]  # level and logger, message start
                report.log_errors[f"{last[:160]}  <- {where}"] += 1
    for violation in report.violations:
        if violation.check != "no 500":
            continue
        for evidence in list(violation.evidence):
            request_id = next((w for w in evidence.split() if w.startswith("req_")), None)
            if request_id is None:
                continue
            for text in logs.values():
                violation.evidence += _around(text, request_id)


def _timestamped(line: str) -> bool:
    """A log record's first line (`2026-11-26 06:37:00,746 ERROR ...`), not a traceback's."""
    return len(line) > 23 and line[:4].isdigit() and line[4] == "-" and line[13] == ":"


def _around(text: str, needle: str) -> list[str]:
    """The record that first mentions `needle` and what it logged under it, quoted; at most
    the last 40 of 80 lines."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if needle in line:
            end = i + 1
            while end < len(lines) and end < i + 80 and not _timestamped(lines[end]):
                end += 1
            return [f"| {entry}" for entry in lines[i : end + 1][-40:]]
    return []
