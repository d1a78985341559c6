"""Chaos suite: a real cluster under a mixed workload and injected faults, then exact checks.

    .venv/bin/python -m bench.chaos --nodes 3 --duration 60 --seed 7
    .venv/bin/python -m bench.chaos --faults kill,stop --duration 30
    .venv/bin/python -m bench.chaos --own-servers \
        --faults kill,stop,pg,broker,pg-restart,broker-restart

What runs. `--nodes` real `run.py` nodes (tests/cluster.py's LocalCluster) on a fresh schema of
one Postgres and on one RabbitMQ, under a cluster name of their own. They run in development
mode: production accepts only `https` webhook targets on public addresses (decisions 10), so
it could deliver nothing to the receiver the suite runs on loopback, and it signs people in
only through real mail. Nothing else in the fault handling differs between the modes.

`--workers` clients spread a mixed workload over every node, for `--companies` companies each
with a webhook endpoint (every event) on a receiver in this process and a bank account:

- payment creates, each with an Idempotency-Key; some are sent again, same key and body, to
  another node after the answer, or to two nodes at once: every 2xx must carry the first id;
- hosted checkouts (`POST /checkout/{reference}/pay`), some clicked twice at once on two nodes
  (two keys): one may pay;
- bursts of three concurrent refunds of one paid payment on three nodes, together asking 135%
  of what remains of it: at most two may be made;
- payouts to the bank account (test mode settles at once, so paid payments are available),
  some sent again with the same key to another node;
- reads of acknowledged payments from any node.

A client whose request got no answer, a 503 or a 5xx sends it again, same key and body, to the
next node (as a balancer would), until it has an answer or `client.RETRY_WITHIN` seconds
passed.

Faults (`--faults`, one at a time, in a seeded order that gives each kind a turn): `kill`
(SIGKILL a node, restart it), `stop` (SIGSTOP a node for longer than the broker's heartbeat
allows, then SIGCONT), `pg` (pg_terminate_backend on every Postgres connection of a node),
`broker` (`rabbitmqctl close_connection` on every AMQP connection of a node; both found by the
node's own sockets in /proc), and with `--own-servers` only, `pg-restart` and `broker-restart`
(the suite then starts a Postgres and a RabbitMQ of its own, so restarting them touches
nobody else). The workload runs for `--duration` seconds and at least until every kind has had
a turn. Then every node is brought back, and the suite waits (on facts, up to `--settle`
seconds) for the shards to balance, refunds and payouts to end, and every event to arrive.

Checks (each finding is a violation; the exit status is 1 when there is one):

1. every acknowledged (2xx) create, refund and payout is stored, once, under its key, and each
   acknowledged payment is readable from every node; nothing is stored for a key whose final
   answer was a refusal (the key is written into the resource: metadata, reason, description);
2. one result per Idempotency-Key: every 2xx answer to one key names the same resource;
3. no over-refund: for every payment, completed and pending refunds sum to its amount at most;
   no payment is charged twice (one `payment` ledger movement each at most);
4. money reconciles: each balance the API shows equals the sum of the ledger movements it
   lists, and the service's own reconciliation (mps.persistence.queries.reconciliation, the
   ledger's zero sum) finds nothing;
5. every listed event reached the receiver with a valid signature, and each company's event
   sequence is gap-free; nothing arrived that is not listed;
6. no 500 (every status is counted, per route), and every 503 carries Retry-After; no other
   unexpected status.

Every file of a run (each node's log) stays in `--out` (var/chaos/<time>/); the report quotes
the node log's traceback of every 500 by its request id.

Where each part lives, the arrows pointing down the list (a module imports only those below
it): `cli` (the command line) -> `suite` (one run, start to end) -> `checks` (the invariants),
`logs` (tracebacks in the nodes' logs), `faults` (injection and recovery), `servers` (Postgres
and RabbitMQ, shared or its own), `workload` (sign-up and the operations) -> `world` (what the
workload built, every key's answers, the webhook receiver) -> `client` (HTTP, counted and
retried) -> `report` (counts, violations, the summary) -> `options`.
"""

from bench.chaos.cli import main
from bench.chaos.options import DEFAULT_FAULTS, FAULTS, Options
from bench.chaos.report import Report, Violation
from bench.chaos.suite import run_chaos

__all__ = ["DEFAULT_FAULTS", "FAULTS", "Options", "Report", "Violation", "main", "run_chaos"]
