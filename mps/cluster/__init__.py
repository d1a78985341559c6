"""Several nodes as one service: the cluster node, shard ownership, heartbeats, and requests
passed to the node that owns their company's shard (docs/architecture.md)."""
