"""Shared fixtures: the repository's paths, and a live Arbiter (the built service) for the tests that need one."""

from __future__ import annotations

from pathlib import Path

from live_service import arbiter_service, clients  # noqa: F401  (fixtures)

TESTS = Path(__file__).resolve().parent

REPO_ROOT = TESTS.parents[2]
TRANSPARENCY_VECTORS = REPO_ROOT / "packages" / "transparency" / "test" / "vectors"
