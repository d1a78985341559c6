"""Response schemas of the resources, for the route table and so for the OpenAPI document.

They describe what handlers send; `tests/test_openapi.py` checks real responses against them.

Split by what they describe: `common` (shared value sets, field schemas and envelopes),
`money`, `webhooks` and `account`.
"""

# The package answers for its submodules: each one's `__all__` says what it offers.
from mps.http.resources import account, common, money, webhooks
from mps.http.resources.account import *  # noqa: F403
from mps.http.resources.common import *  # noqa: F403
from mps.http.resources.money import *  # noqa: F403
from mps.http.resources.webhooks import *  # noqa: F403

__all__ = [*account.__all__, *common.__all__, *money.__all__, *webhooks.__all__]
