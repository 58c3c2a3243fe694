"""Shared fixtures: the repository's paths, and a live Arbiter (the built service) for the tests that need one."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# The working tree's package, ahead of any installed copy.
sys.path.insert(0, str(TESTS.parent / "src"))

from live_service import arbiter_service, clients  # noqa: E402, F401  (fixtures)

REPO_ROOT = TESTS.parents[2]
TRANSPARENCY_VECTORS = REPO_ROOT / "packages" / "transparency" / "test" / "vectors"
