"""What a node knows of its peers from their heartbeats (mps.cluster.membership)."""

from __future__ import annotations

from mps.cluster.membership import Heartbeat, Membership


def test_counting_the_peers_heard_for_a_scrape_takes_no_node_for_gone() -> None:
    # given a peer last heard 10 s ago, past the timeout
    membership = Membership("node1", 4, timeout=3.5)
    membership.saw(Heartbeat("node2", frozenset({1, 2}), seen_at=0.0))

    # when a scrape counts the peers heard from
    counted = membership.heard_within(10.0)

    # then it is not counted, and its departure is still reported once, by the heartbeats' pass
    assert counted == 0
    assert [gone.node for gone in membership.departures(10.0)] == ["node2"]
    assert membership.departures(10.0) == []
