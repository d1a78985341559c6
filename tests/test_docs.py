"""The documentation stays true of the repository: every relative link in the README and docs/
leads somewhere, every setting the service reads is in the runbook, the README's two commands
are the ones the scripts and CI run, the routes the API guide lists exist, the runbook's queue
count is the code's, and the deploy/ files name what exists."""

from __future__ import annotations

import re
from pathlib import Path

from mps.adapters.broker import DELAY_LEVELS_MS
from mps.config import PRODUCTION_SHUTDOWN_GRACE
from mps.domain.shards import SHARD_COUNT
from mps.domain.webhooks import EVENT_FAMILIES, EVENT_TYPES
from mps.http.routes import all_routes
from mps.webhooks.topology import Topology
from tests.setting_names import ROOT, settings_the_service_reads

DOCS = ROOT / "docs"
README = ROOT / "README.md"
OPERATIONS = DOCS / "operations.md"
API_GUIDE = DOCS / "api.md"


def _pages() -> list[Path]:
    pages = [README, *sorted(DOCS.glob("*.md"))]
    assert len(pages) >= 8, pages  # the README and the guides it maps
    return pages


def _without_code_blocks(text: str) -> str:
    """The text outside fenced code blocks (where brackets are code, not links)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _without_code_blocks(page.read_text())
    return {_anchor(h) for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE)}


def _links(page: Path) -> list[str]:
    return re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", _without_code_blocks(page.read_text()))


def test_every_relative_link_in_the_readme_and_docs_resolves_to_a_file_and_heading() -> None:
    broken: list[str] = []
    checked = 0
    for page in _pages():
        for link in _links(page):
            if re.match(r"[a-z]+:", link):  # https:, mailto:: not ours to check
                continue
            checked += 1
            target, _, fragment = link.partition("#")
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {link} (no such file)")
            elif fragment and path.suffix == ".md" and fragment not in _anchors(path):
                broken.append(f"{page.relative_to(ROOT)}: {link} (no such heading)")
    assert checked > 50
    assert broken == []


def test_no_page_points_at_what_a_clone_does_not_have() -> None:
    # the contract's folder sits beside the repository, not in it
    for page in _pages():
        assert "../shared/" not in page.read_text(), page


def test_every_setting_the_service_reads_is_in_the_runbook() -> None:
    runbook = OPERATIONS.read_text()

    missing = sorted(
        name for name in settings_the_service_reads() if not re.search(rf"\b{name}\b", runbook)
    )

    assert missing == []


def test_the_readme_two_commands_are_the_ones_the_scripts_and_ci_run() -> None:
    # given: the README's two commands, first thing after its introduction
    section = README.read_text().split("## Two commands", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None
    commands = [line.split("#", 1)[0].strip() for line in block[1].strip().splitlines()]

    # then: they are scripts/serve and scripts/test, as they are
    assert commands == ["scripts/serve", "scripts/test"]
    serve = (ROOT / "scripts" / "serve").read_text()
    test = (ROOT / "scripts" / "test").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    # the first serves run.py with only what it is given: the embedded default by itself
    assert re.search(r'^exec \.venv/bin/python run\.py "\$@"$', serve, re.MULTILINE)
    # the second runs the whole suite, services required: the tests not marked serial, then the
    # serial ones, with the same arguments; and CI runs exactly it
    assert re.search(r"^export MPS_REQUIRE_SERVICES=1$", test, re.MULTILINE)
    assert re.search(r"^  \.venv/bin/python -m pytest .*\"\$@\"", test, re.MULTILINE)
    assert re.search(r'^run .*-m "not serial" "\$@"', test, re.MULTILINE)
    assert re.search(r'^run -m serial "\$@"', test, re.MULTILINE)
    assert re.search(r"^exec scripts/test$", ci, re.MULTILINE)
    for script in ("scripts/serve", "scripts/test", ".ci/run"):
        assert (ROOT / script).stat().st_mode & 0o111, f"{script} is not executable"


def test_every_route_the_api_guide_lists_exists() -> None:
    # given: the routes of the guide's table ("| `POST /merchant/payments` | …")
    listed = re.findall(r"^\| `([A-Z]+) (/\S*)` \|", API_GUIDE.read_text(), re.MULTILINE)
    assert len(listed) > 100

    # when: the routes the service declares (development's included: the dev mailbox, the
    # explorer)
    declared = {(route.method, route.path) for route in all_routes(development=True)}

    # then
    assert sorted(set(listed) - declared) == []


def test_the_runbook_counts_the_queues_the_cluster_declares() -> None:
    # 64 shard queues, the webhook queues and one delay queue per level
    queues = SHARD_COUNT + len(Topology("mps").queues) + len(DELAY_LEVELS_MS)

    assert queues == 79
    assert f"**{queues} durable queues for the cluster**" in OPERATIONS.read_text()
    assert f"{queues} durable queues" in (DOCS / "cluster.md").read_text()


def test_the_systemd_unit_reads_the_example_settings_and_outwaits_the_drain() -> None:
    unit = (ROOT / "deploy" / "mps@.service").read_text()

    assert "EnvironmentFile=/etc/mps/production.env" in unit
    assert re.search(r"^ExecStart=\S+/python \S+/run\.py$", unit, re.MULTILINE)
    stop = re.search(r"^TimeoutStopSec=(\d+)$", unit, re.MULTILINE)
    assert stop is not None and int(stop[1]) > 4 * PRODUCTION_SHUTDOWN_GRACE
    # the example's file name is the one the unit and the runbook name
    assert (ROOT / "deploy" / "production.env.example").exists()
    assert "deploy/production.env.example" in OPERATIONS.read_text()


def test_the_webhooks_guide_names_every_event_and_family_of_the_catalog() -> None:
    guide = (DOCS / "webhooks.md").read_text()

    missing = [name for name in EVENT_TYPES if f"`{name}`" not in guide]
    missing += [f"{family}.*" for family in EVENT_FAMILIES if f"`{family}.*`" not in guide]

    assert missing == []
