"""Python client of Arbiter: settles disagreements between AI orchestrators and signs its decisions.

    from arbiter_client import Arbiter
    client = Arbiter(base_url="http://127.0.0.1:8080", api_key="arb_…")
    outcome = client.outcomes.create(subagent_id="refund-agent", run_id="run-1", evidence=[...])

Offline checks need no server: verify_envelope, verify_checkpoint, verify_inclusion, verify_consistency,
verify_manifest_inclusion and verify_webhook.
"""

from . import models
from ._client import Arbiter, AsyncArbiter
from ._envelope import VerifiedEnvelope, jwk_thumbprint, verify_envelope
from ._errors import (
    ArbiterClientError,
    ArbiterConnectionError,
    ArbiterError,
    ArbiterProtocolError,
    ArbiterTimeoutError,
    VerificationError,
)
from ._inclusion import VerifiedInclusion, verify_manifest_inclusion
from ._operation import NOT_GIVEN, NotGiven
from ._pagination import AsyncCursorPage, AsyncPaginator, SyncCursorPage
from ._retry import RetryPolicy
from ._stream import ManifestEvent
from ._version import __version__
from .jcs import canonicalize, sha256_digest
from .merkle import verify_consistency, verify_inclusion
from .note import Checkpoint, verify_checkpoint
from .webhooks import verify_webhook

__all__ = [
    "NOT_GIVEN",
    "Arbiter",
    "ArbiterClientError",
    "ArbiterConnectionError",
    "ArbiterError",
    "ArbiterProtocolError",
    "ArbiterTimeoutError",
    "AsyncArbiter",
    "AsyncCursorPage",
    "AsyncPaginator",
    "Checkpoint",
    "ManifestEvent",
    "NotGiven",
    "RetryPolicy",
    "SyncCursorPage",
    "VerificationError",
    "VerifiedEnvelope",
    "VerifiedInclusion",
    "__version__",
    "canonicalize",
    "jwk_thumbprint",
    "models",
    "sha256_digest",
    "verify_checkpoint",
    "verify_consistency",
    "verify_envelope",
    "verify_inclusion",
    "verify_manifest_inclusion",
    "verify_webhook",
]
