"""A live Arbiter for the tests: the built service (`node dist/server.js`) on a loopback port, on a database of
its own (a fresh database on the PostgreSQL server named by TEST_DATABASE_URL, else the embedded one in a fresh
data dir), with a bootstrapped admin key. One per test session; `restart()` stops and starts it on the same
port and data."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from arbiter_client import Arbiter

REPO_ROOT = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _psql(server_url: str, sql: str) -> None:
    subprocess.run(["psql", "-v", "ON_ERROR_STOP=1", "-q", "-d", server_url, "-c", sql], check=True)


class Service:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = Path(tempfile.mkstemp(prefix="arbiter-py-service-", suffix=".log")[1])

    def start(self, timeout: float = 60.0) -> None:
        server = REPO_ROOT / "dist" / "server.js"
        if not server.exists():
            raise RuntimeError(f"{server} is missing: run `npm run build` (npm ci does) first")
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", ""),
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "LOG_LEVEL": "warn",
            **self.env,
        }
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                ["node", str(server)], cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the service exited ({self.process.returncode}):\n{self.log.read_text()}")
            try:
                with urllib.request.urlopen(self.base_url + "/readyz", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the service was not ready in time:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def restart(self) -> None:
        self.stop()
        self.start()


@dataclass
class Clients:
    """Clients of the live service, one per role; orchestrator keys are bound to orch-a and orch-b."""

    base_url: str
    admin_key: str
    admin: Arbiter
    orch_a: Arbiter
    orch_b: Arbiter
    ops: Arbiter
    dashboard: Arbiter
    keys: dict[str, str]

    def client(self, api_key: str | None, **options: object) -> Arbiter:
        return Arbiter(base_url=self.base_url, api_key=api_key or "", **options)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def arbiter_service() -> Iterator[tuple[Service, str]]:
    admin_key = "admin_" + secrets.token_hex(24)
    data_dir = tempfile.mkdtemp(prefix="arbiter-py-data-")
    env = {
        "ARBITER_DATA_DIR": data_dir,
        "ARBITER_BOOTSTRAP_ADMIN_KEY": admin_key,
        "ARBITER_PROBE_ALLOW_PRIVATE": "true",
        "ARBITER_WEBHOOK_ALLOW_PRIVATE": "true",
        "ARBITER_CHECKPOINT_INTERVAL_MS": "200",
    }
    server_url = os.environ.get("TEST_DATABASE_URL")
    database = None
    if server_url:
        database = f"arbiter_py_{os.getpid()}_{secrets.token_hex(4)}"
        _psql(server_url, f"CREATE DATABASE {database}")
        parts = urllib.parse.urlsplit(server_url)
        env["DATABASE_URL"] = urllib.parse.urlunsplit(parts._replace(path="/" + database))
    service = Service(env)
    try:
        service.start()
        yield service, admin_key
    finally:
        service.stop()
        if database and server_url:
            _psql(server_url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        shutil.rmtree(data_dir, ignore_errors=True)
        service.log.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def clients(arbiter_service: tuple[Service, str]) -> Iterator[Clients]:
    service, admin_key = arbiter_service
    admin = Arbiter(base_url=service.base_url, api_key=admin_key)
    keys = {
        "orch_a": admin.keys.create(role="orchestrator", orchestrator_ids=["orch-a"], label="orchestrator A").key,
        "orch_b": admin.keys.create(role="orchestrator", orchestrator_ids=["orch-b"], label="orchestrator B").key,
        "ops": admin.keys.create(role="ops", label="ops").key,
        "dashboard": admin.keys.create(role="dashboard", label="dashboard").key,
    }
    made = {name: Arbiter(base_url=service.base_url, api_key=key) for name, key in keys.items()}
    yield Clients(
        service.base_url, admin_key, admin, made["orch_a"], made["orch_b"], made["ops"], made["dashboard"], keys
    )
    for client in [admin, *made.values()]:
        client.close()
