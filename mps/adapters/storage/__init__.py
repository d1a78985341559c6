"""Object storage for uploaded documents: one interface (mps.adapters.storage.base), two backends.

store = open_store(settings.object_storage_url, env=os.environ)
stored = await store.put("kyc/co_abc/doc_xyz", chunks, content_type=..., max_bytes=...)
async with store.get(stored.key) as body:
    async for chunk in body: ...
await store.close()
"""

from mps.adapters.storage import base
from mps.adapters.storage.base import *  # noqa: F403
from mps.adapters.storage.filesystem import FilesystemStore
from mps.adapters.storage.s3 import S3Store

__all__ = ["FilesystemStore", "S3Store"]
__all__ += base.__all__
