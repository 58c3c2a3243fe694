import { randomUUID } from 'node:crypto'
import { type AuditEntry, appendAuditRecords } from '../audit-log/append.ts'
import { type Queryable, withTransaction } from '../db/pool.ts'
import {
  type ProbeRow,
  probeById as probeByIdStatement,
  probeInsert,
  probesPage,
  probeUpdate,
} from '../db/repositories/probes.ts'
import { queryFirst, queryRows, runStatement } from '../db/statement.ts'
import { hashJson, type JsonValue } from '../domain/shared/canonical-json.ts'
import { AppError, found } from '../errors.ts'
import { type Page, type PageRequest, readCreatedPage } from '../pagination.ts'
import { normalizeProbeDefinition, type ProbeDefinitionInput } from '../probes/probe-definition.ts'
import { type GroundTruthRecord, runProbe } from '../probes/probe-runner.ts'
import { checkRegistrationUrl } from '../probes/ssrf-guard.ts'
import type { Actor, ServiceContext } from './context.ts'

function toProbeView({ id, name, version, probe_digest, definition, created_at }: ProbeRow) {
  return { probe_id: id, name, version, probe_digest, definition, created_at: created_at.toISOString() }
}

/** Defaults filled, registration-time SSRF check (a non-public IP literal is refused unless allowed). */
function prepareDefinition(ctx: Pick<ServiceContext, 'probes'>, input: ProbeDefinitionInput) {
  const definition = normalizeProbeDefinition(input)
  const refusal = checkRegistrationUrl(definition.request.url, ctx.probes.policy)
  if (refusal) {
    throw new AppError('VALIDATION', `probe url refused: ${refusal}`, {}, [
      { path: 'body/request/url', message: refusal },
    ])
  }
  return { definition, digest: hashJson(definition) }
}

/** `probe.registered` for a new probe (POST), `probe.updated` for a replaced definition (PUT). */
function probeEntry(kind: 'probe.registered' | 'probe.updated', row: ProbeRow, actor: Actor): AuditEntry {
  return {
    kind,
    actor,
    data: { probe_id: row.id, name: row.name, version: row.version, probe_digest: row.probe_digest },
  }
}

export async function registerProbe(ctx: ServiceContext, input: ProbeDefinitionInput, actor: Actor) {
  const { definition, digest } = prepareDefinition(ctx, input)
  const now = new Date()
  const row: ProbeRow = {
    id: randomUUID(),
    name: definition.name,
    version: 1,
    definition,
    probe_digest: digest,
    created_at: now,
    updated_at: now,
  }
  await withTransaction(ctx.db, async (tx) => {
    await runStatement(tx, probeInsert(row))
    await appendAuditRecords(tx, [probeEntry('probe.registered', row, actor)])
  })
  return toProbeView(row)
}

/** PUT: replaces the definition, version + 1; outcomes keep naming the probe and use the version current at run time. */
export async function replaceProbe(
  ctx: ServiceContext,
  probeId: string,
  input: ProbeDefinitionInput,
  actor: Actor,
) {
  return withTransaction(ctx.db, async (tx) => {
    const current = found(
      await queryFirst(tx, probeByIdStatement(probeId, { lock: true })),
      `no probe ${probeId}`,
    )
    // After the lookup: a refused URL is a 400 about the body, which an unknown probe's 404 comes before.
    const { definition, digest } = prepareDefinition(ctx, input)
    const row: ProbeRow = {
      ...current,
      name: definition.name,
      version: current.version + 1,
      definition,
      probe_digest: digest,
      updated_at: new Date(),
    }
    await runStatement(tx, probeUpdate(row))
    await appendAuditRecords(tx, [probeEntry('probe.updated', row, actor)])
    return toProbeView(row)
  })
}

/** How a route finds the probe its path names (for a 404 before the body is judged). */
export const probeById = {
  noun: 'probe',
  find: (db: Queryable, id: string) => queryFirst(db, probeByIdStatement(id)),
}

export async function getProbe(ctx: Pick<ServiceContext, 'db'>, probeId: string) {
  const row = found(await queryFirst(ctx.db, probeByIdStatement(probeId)), `no probe ${probeId}`)
  return toProbeView(row)
}

export async function pageProbes(
  ctx: Pick<ServiceContext, 'db'>,
  page: PageRequest,
): Promise<Page<ProbeView>> {
  return readCreatedPage(page, (after, limit) => queryRows(ctx.db, probesPage(after, limit)), toProbeView)
}

export type ProbeView = ReturnType<typeof toProbeView>

/**
 * POST /v1/probes/{id}/dry-run: executes the current version against the given params without touching any
 * outcome. The execution is still audited (`probe.executed` with no outcome): it called a real endpoint.
 */
export async function dryRunProbe(
  ctx: ServiceContext,
  probeId: string,
  input: {
    params?: Record<string, JsonValue> | undefined
    outcome?: { subagent_id: string; run_id: string } | undefined
  },
  actor: Actor,
): Promise<GroundTruthRecord> {
  const row = found(await queryFirst(ctx.db, probeByIdStatement(probeId)), `no probe ${probeId}`)
  const record = await runRegisteredProbe(ctx, row, input.params ?? {}, input.outcome ?? null)
  const entry = probeExecutedEntry(record, actor)
  await withTransaction(ctx.db, (tx) =>
    appendAuditRecords(tx, [{ ...entry, data: { ...entry.data, dry_run: true } }]),
  )
  return record
}

/** Executes the version of a probe given, under the deployment's SSRF policy, and records its metrics. */
export async function runRegisteredProbe(
  ctx: ServiceContext,
  probe: ProbeRow,
  params: Record<string, unknown>,
  outcome: { subagent_id: string; run_id: string } | null,
): Promise<GroundTruthRecord> {
  const { record, durationMs } = await runProbe(
    {
      probe_id: probe.id,
      version: probe.version,
      probe_digest: probe.probe_digest,
      definition: probe.definition,
    },
    params,
    outcome,
    { policy: ctx.probes.policy, env: ctx.probes.env },
  )
  ctx.metrics.probeDuration.observe({ probe_id: record.probe_id }, durationMs / 1000)
  if (record.error) ctx.metrics.probeErrors.inc({ probe_id: record.probe_id, reason: record.error.code })
  return record
}

/**
 * The `probe.executed` audit entry: what was requested and what came back (never header values). The case it
 * ran for, if any, adds its ids.
 */
export function probeExecutedEntry(record: GroundTruthRecord, actor: Actor): AuditEntry {
  return {
    kind: 'probe.executed',
    actor,
    data: {
      probe_id: record.probe_id,
      probe_version: record.probe_version,
      probe_digest: record.probe_digest,
      request: record.request,
      executed_at: record.executed_at,
      attempts: record.attempts,
      http_status: record.http_status,
      response_digest: record.response_digest,
      result: record.result,
      error: record.error,
    },
  }
}
