"""The rest of the API against the live service: probes, sub-agent policies, keys, the audit log's reads and
proofs, and the service's own routes. Each answer is parsed into its generated model, so a model that does not
fit what the service sends fails here."""

from __future__ import annotations

import base64
import secrets

import pytest
from live_service import Clients

from arbiter_client import ArbiterError, verify_inclusion
from arbiter_client.jcs import canonical_bytes
from arbiter_client.merkle import b64decode_hash, leaf_hash


def test_probes_register_replace_and_dry_run(clients: Clients) -> None:
    admin = clients.admin
    probe = admin.probes.create(
        name="service-health-" + secrets.token_hex(3),
        request={"method": "GET", "url": f"{clients.base_url}/healthz"},
        predicate={"status": 200, "pointer": "/status", "map": {"ok": "success"}},
    )
    assert probe.version == 1 and probe.definition.timeout_ms == 2000
    replaced = admin.probes.replace(
        probe.probe_id,
        name=probe.name,
        request={"method": "GET", "url": f"{clients.base_url}/healthz"},
        predicate={"status": 200, "pointer": "/status", "map": {"ok": "success"}},
        retries=1,
    )
    assert (replaced.version, replaced.probe_digest != probe.probe_digest) == (2, True)
    assert admin.probes.get(probe.probe_id).version == 2
    assert probe.probe_id in [p.probe_id for p in admin.probes.list()]
    ran = admin.probes.dry_run(probe.probe_id, params={})
    assert (ran.result, ran.http_status, ran.error) == ("success", 200, None)


def test_sub_agent_policies_set_get_and_delete(clients: Clients) -> None:
    subagent = "policy-agent-" + secrets.token_hex(3)
    policy = clients.admin.subagent_policies.set(
        subagent, expected_orchestrators=["orch-a", "orch-b"], deadline_seconds=600
    )
    assert policy.expected_orchestrators == ["orch-a", "orch-b"] and policy.deadline_seconds == 600
    assert clients.admin.subagent_policies.get(subagent).subagent_id == subagent
    with pytest.raises(ArbiterError) as caught:
        clients.orch_a.outcomes.create(
            subagent_id=subagent,
            run_id="r1",
            evidence=[{"kind": "exit_code", "content": 0}],
            expected_orchestrators=["orch-a"],
        )
    assert caught.value.status == 422
    assert clients.admin.subagent_policies.delete(subagent) is None
    with pytest.raises(ArbiterError) as caught:
        clients.admin.subagent_policies.get(subagent)
    assert caught.value.status == 404


def test_keys_list_and_revoke(clients: Clients) -> None:
    created = clients.admin.keys.create(role="dashboard", label="short-lived")
    reader = clients.client(created.key, max_retries=0)
    assert reader.outcomes.list(limit=1).items is not None
    assert clients.admin.keys.revoke(created.id) is None
    listed = {k.id: k for k in clients.admin.keys.list()}
    assert listed[created.id].revoked_at is not None
    with pytest.raises(ArbiterError) as caught:
        reader.outcomes.list(limit=1)
    assert caught.value.status == 401


def test_audit_records_and_an_inclusion_proof_of_one(clients: Clients) -> None:
    outcome = clients.orch_a.outcomes.create(
        subagent_id="audit-agent", run_id="a-" + secrets.token_hex(4), evidence=[{"kind": "exit_code", "content": 0}]
    )
    records = list(clients.ops.audit.records(outcome_id=outcome.outcome_id, limit=1))
    assert [r.kind for r in records] == ["outcome.created"]
    record = records[0]
    proof = clients.ops.audit.inclusion_proof(seq=record.seq)
    assert proof.checkpoint is not None
    leaf = leaf_hash(canonical_bytes(record.model_dump(mode="json", by_alias=True, exclude_unset=True)))
    assert base64.b64encode(leaf).decode() == proof.leaf_hash
    root = b64decode_hash(proof.checkpoint.checkpoint.root_hash)
    path = [b64decode_hash(p) for p in proof.proof]
    assert verify_inclusion(proof.leaf_index, proof.tree_size, leaf, path, root)
    assert not verify_inclusion(proof.leaf_index, proof.tree_size, leaf_hash(b"forged"), path, root)
    report = clients.ops.audit.verify(from_seq=1, to_seq=record.seq)
    assert report.ok and report.first_bad_seq is None


def test_the_services_own_routes(clients: Clients) -> None:
    anonymous = clients.client(None)
    assert anonymous.health().status == "ok"
    assert anonymous.readiness().status
    assert "# HELP" in anonymous.metrics()
    assert anonymous.openapi()["openapi"].startswith("3.")
    jwks = anonymous.jwks()
    assert jwks.keys and jwks.keys[0].kty == "OKP"
