"""The resources mps.bootstrap opens, one cleanup context each, grouped by what they hold.

    parts       what the contexts share (`Parts`, under one app key) and a test's `Overrides`
    storage     the keys, the database, the writer, the broker, object storage, mail, credentials
    shards      the shards of actors and the cluster node that takes them
    work        the deadlines' watchdog, the periodic schedulers, webhook deliveries
    serving     the services the handlers use, the metrics listener, the start-up log

mps.bootstrap lists them in the order they open; aiohttp closes them in reverse. Nothing here
connects at import time.
"""
