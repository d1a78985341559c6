"""The cleanup contexts of what the service keeps and reaches: the keys, the database, the
writer, the broker, object storage, mail and credentials, in the order they open.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

from aiohttp import web

from mps.actors.context import ActorContext
from mps.actors.persistence import PersistenceActor
from mps.actors.runtime import stop
from mps.adapters.broker import open_broker
from mps.adapters.mail import DevMailbox, SmtpMailer
from mps.adapters.storage import open_store
from mps.auth.credentials import Credentials
from mps.auth.keyring import Keyring
from mps.auth.tokens import SessionTokens
from mps.composition.parts import PARTS
from mps.persistence.database import open_database
from mps.persistence.shard_store import backfill_company_shards


async def keys(app: web.Application) -> AsyncIterator[None]:
    """The keyring and the session tokens. First, so key material that cannot be used stops
    the start before anything connects; nothing to close."""
    parts = app[PARTS]
    settings = parts.settings
    parts.keyring = Keyring(
        settings.session_secret,
        settings.encryption_key,
        session_secret_previous=settings.session_secret_previous,
        encryption_key_previous=settings.encryption_key_previous,
        id_key=settings.id_key,
    )
    parts.tokens = SessionTokens(*parts.keyring.session_keys)
    yield


async def database(app: web.Application) -> AsyncIterator[None]:
    """The database, migrated on open (and wrapped by a test's `wrap_database`), with every
    company's shard recorded. Closed last."""
    parts = app[PARTS]
    database = open_database(parts.settings.database_url)
    await database.open()
    try:
        if parts.extra.wrap_database is not None:
            database = parts.extra.wrap_database(database)
        parts.database = database
        await backfill_company_shards(database)
        yield
    finally:
        await database.close()


async def writer(app: web.Application) -> AsyncIterator[None]:
    """The persistence actor, every write's way to the database. Stopped after everything that
    writes has closed, so what they recorded (key uses, passivating actors) is written."""
    parts = app[PARTS]
    parts.persistence = PersistenceActor.start(
        parts.database,
        observe=parts.metrics.observe_commit,
        on_fenced=parts.on_fenced,
        on_events=parts.on_events,
    )
    try:
        parts.context = ActorContext(parts.database, parts.persistence, parts.extra.clock)
        yield
    finally:
        await stop(parts.persistence)


async def broker(app: web.Application) -> AsyncIterator[None]:
    """The broker (in-process, or RabbitMQ): webhooks' queues and the nodes' broadcasts."""
    parts = app[PARTS]
    broker = open_broker(parts.settings.broker_url)
    try:
        await broker.connect()
        parts.broker = broker
        yield
    finally:
        await broker.close()


async def object_storage(app: web.Application) -> AsyncIterator[None]:
    """Where uploaded documents' bytes go (a folder, or S3)."""
    parts = app[PARTS]
    objects = open_store(parts.settings.objects_url, env=os.environ)
    try:
        parts.objects = objects
        yield
    finally:
        await objects.close()


async def mail(app: web.Application) -> AsyncIterator[None]:
    """A test's mailer; else the dev mailbox in development or without MPS_SMTP_URL, SMTP
    otherwise. A mailer connects per message, so there is nothing to close."""
    parts = app[PARTS]
    settings = parts.settings
    parts.mailer = parts.extra.mailer or (
        DevMailbox()
        if settings.development or not settings.smtp_url
        else SmtpMailer(settings.smtp_url, settings.mail_from, ca_file=settings.smtp_ca_file)
    )
    yield


async def credentials(app: web.Application) -> AsyncIterator[None]:
    """Sessions and API keys, told of revocations made on other nodes through the broker."""
    parts = app[PARTS]
    parts.credentials = Credentials(parts.tokens, parts.keyring, parts.database, parts.extra.clock)
    await parts.credentials.attach(parts.broker)
    yield
