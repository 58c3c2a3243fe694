#!/usr/bin/env bash
# An orchestrator's round trip, end to end, against a running Arbiter:
#
#   1. keys for two orchestrators (orch-a, orch-b), ops and a dashboard, made with the admin key;
#   2. a ground-truth probe, registered and tried once with a dry run;
#   3. an outcome with that probe attached, both orchestrators' interpretations (they disagree), an evaluation by
#      each (the same signed manifest), and the manifest verified offline with the JWKS;
#   4. a second outcome with no probe, where the disagreement HALTs, the escalation ops sees, and its resolution.
#
# Usage:  ADMIN_KEY=arb_... [ARBITER_URL=http://127.0.0.1:8080] examples/round-trip.sh
#
# Needs bash, curl and node (no jq: examples/lib/json-field.mjs reads the answers), and `npm ci` run once in this
# repository (it builds dist/, whose CLI verifies the manifest).
#
# The probe calls PROBE_URL, by default Arbiter's own /healthz (it answers {"status":"ok"}), so the example needs
# no other service. That address is loopback, which the SSRF guard refuses unless the service runs with
# ARBITER_PROBE_ALLOW_PRIVATE=true: set it for this walkthrough on your own machine, or point PROBE_URL at a
# public endpoint answering {"status": "ok"}. Never allow private addresses on a shared network.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ARBITER_URL=${ARBITER_URL:-http://127.0.0.1:8080}
ADMIN_KEY=${ADMIN_KEY:?set ADMIN_KEY to an admin key (the one Arbiter printed on its first start)}
PROBE_URL=${PROBE_URL:-$ARBITER_URL/healthz}
# One run id per run, so the example can be run again against the same service.
RUN=${RUN:-$(date -u +%Y%m%dT%H%M%S)-$$}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# api METHOD PATH KEY [JSON]: one call; sets STATUS and BODY, prints one line, stops the script on a non-2xx.
api() {
  local method=$1 path=$2 key=$3 data=${4-}
  local args=(-sS -X "$method" -H "authorization: Bearer $key" -o "$TMP/body" -w '%{http_code}')
  if [ -n "$data" ]; then args+=(-H 'content-type: application/json' --data-binary "$data"); fi
  STATUS=$(curl "${args[@]}" "$ARBITER_URL$path")
  BODY=$(cat "$TMP/body")
  echo "  $method $path -> $STATUS"
  case $STATUS in
    2??) ;;
    *) echo "unexpected answer: $BODY" >&2; exit 1 ;;
  esac
}
# field PATH...: fields of the last answer (`manifest.verdict`, `items.0.id`).
field() { printf '%s' "$BODY" | node "$HERE/lib/json-field.mjs" "$@"; }

echo "== 1. keys (admin): two orchestrators, ops, a dashboard"
api POST /v1/admin/keys "$ADMIN_KEY" '{"role":"orchestrator","orchestrator_ids":["orch-a"],"label":"orchestrator A"}'
ORCH_A=$(field key)
api POST /v1/admin/keys "$ADMIN_KEY" '{"role":"orchestrator","orchestrator_ids":["orch-b"],"label":"orchestrator B"}'
ORCH_B=$(field key)
api POST /v1/admin/keys "$ADMIN_KEY" '{"role":"ops","label":"on-call"}'
OPS=$(field key)
api POST /v1/admin/keys "$ADMIN_KEY" '{"role":"dashboard","label":"wall screen"}'
DASHBOARD=$(field key)

echo "== 2. a ground-truth probe (admin), and a dry run"
# Templates ({{params.x}}, {{outcome.run_id}}) go in the URL's path or query only.
api POST /v1/probes "$ADMIN_KEY" '{
  "name": "refund-settled-'"$RUN"'",
  "request": {"method": "GET", "url": "'"$PROBE_URL"'?refund={{params.refund_id}}"},
  "timeout_ms": 2000, "retries": 1,
  "predicate": {"status": 200, "pointer": "/status", "map": {"ok": "success", "failed": "failure"}}}'
PROBE=$(field probe_id)
api POST "/v1/probes/$PROBE/dry-run" "$ADMIN_KEY" '{"params": {"refund_id": "re_1"}}'
echo "probe $PROBE dry run: result=$(field result) http_status=$(field http_status)"

echo "== 3. an outcome with the probe attached"
OUTCOME_BODY='{
  "subagent_id": "refund-agent", "run_id": "'"$RUN"'",
  "evidence": [{"kind": "exit_code", "content": 0},
               {"kind": "side_effect_receipt", "name": "psp", "content": {"receipt": "r-991"}}],
  "expected_orchestrators": ["orch-a", "orch-b"],
  "probe": {"probe_id": "'"$PROBE"'", "params": {"refund_id": "re_1"}}}'
# Either orchestrator records the shared result: the first gets 201, the second 200 and the same outcome.
api POST /v1/outcomes "$ORCH_A" "$OUTCOME_BODY"
OUTCOME=$(field outcome_id)
api POST /v1/outcomes "$ORCH_B" "$OUTCOME_BODY"
[ "$(field outcome_id)" = "$OUTCOME" ] || { echo "orch-b got another outcome" >&2; exit 1; }
echo "outcome $OUTCOME"

# Each orchestrator interprets under its own id. intended_action.kind is one of
# proceed | compensate | retry | halt | other; resources name what the action touches.
api POST "/v1/outcomes/$OUTCOME/interpretations" "$ORCH_A" '{
  "orchestrator_id": "orch-a", "outcome_interpretation": "success",
  "success_criterion": {"require": ["exit_code == 0"]},
  "intended_action": {"kind": "proceed", "resources": ["refund:re_1"]}}'
api POST "/v1/outcomes/$OUTCOME/interpretations" "$ORCH_B" '{
  "orchestrator_id": "orch-b", "outcome_interpretation": "failure",
  "success_criterion": {"require": ["exit_code == 0", "receipt present"]},
  "intended_action": {"kind": "compensate", "resources": ["refund:re_1"]}}'

# Both evaluate and receive the same signed manifest; only action_owner performs side effects.
api POST "/v1/outcomes/$OUTCOME/evaluate" "$ORCH_A"
MANIFEST=$(field manifest.manifest_id)
printf '%s' "$BODY" >"$TMP/manifest.json"
echo "manifest $MANIFEST: verdict=$(field manifest.verdict) directive=$(field manifest.directive) action_owner=$(field manifest.action_owner)"
api POST "/v1/outcomes/$OUTCOME/evaluate" "$ORCH_B"
[ "$(field manifest.manifest_id)" = "$MANIFEST" ] || { echo "orch-b got another manifest" >&2; exit 1; }

# Offline check of the signature and digest against the service's JWKS (a saved jwks.json works too).
node "$HERE/../dist/cli.js" verify "$TMP/manifest.json" --jwks "$ARBITER_URL/.well-known/jwks.json"

echo "== 4. a disagreement nothing settles: HALT, escalation, resolution"
api POST /v1/outcomes "$ORCH_A" '{
  "subagent_id": "refund-agent", "run_id": "'"$RUN"'-halt",
  "evidence": [{"kind": "exit_code", "content": 1}],
  "expected_orchestrators": ["orch-a", "orch-b"]}'
HALTED=$(field outcome_id)
api POST "/v1/outcomes/$HALTED/interpretations" "$ORCH_A" '{
  "orchestrator_id": "orch-a", "outcome_interpretation": "partial",
  "success_criterion": {"require": ["exit_code in [0, 1]"]},
  "intended_action": {"kind": "retry", "resources": ["refund:re_2"]}}'
api POST "/v1/outcomes/$HALTED/interpretations" "$ORCH_B" '{
  "orchestrator_id": "orch-b", "outcome_interpretation": "failure",
  "success_criterion": {"require": ["exit_code == 0"]},
  "intended_action": {"kind": "compensate", "resources": ["refund:re_2"]}}'
api POST "/v1/outcomes/$HALTED/evaluate" "$ORCH_A"
HALT_MANIFEST=$(field manifest.manifest_id)
echo "manifest $HALT_MANIFEST: verdict=$(field manifest.verdict) directive=$(field manifest.directive)"
# A dashboard key reads every manifest; ops sees the escalation and resolves it.
api GET "/v1/manifests/$HALT_MANIFEST" "$DASHBOARD"
api GET '/v1/escalations?status=open&case=outcome' "$OPS"
printf '%s' "$BODY" | node -e '
  const page = JSON.parse(require("node:fs").readFileSync(0, "utf8"))
  if (!page.items.some((e) => JSON.stringify(e).includes(process.argv[1]))) {
    console.error(`no open escalation for ${process.argv[1]}`)
    process.exit(1)
  }' "$HALTED"
echo "escalation open for outcome $HALTED"
api POST "/v1/outcomes/$HALTED/resolution" "$OPS" '{
  "outcome": "failure", "rationale": "the ledger shows refund re_2 reversed", "action_owner": "orch-b"}'
echo "resolution manifest $(field manifest.manifest_id): verdict=$(field manifest.verdict) directive=$(field manifest.directive) action_owner=$(field manifest.action_owner) supersedes=$(field manifest.supersedes)"

echo "== 5. the audit trail (ops)"
api GET "/v1/audit/outcomes/$HALTED" "$OPS"
api GET /v1/audit/verify "$OPS"
echo "audit log verifies: $(field ok)"
echo "round trip complete"
