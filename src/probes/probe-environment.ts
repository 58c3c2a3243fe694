/**
 * Which environment variables a probe header `{"env": NAME}` may read. Arbiter's own configuration
 * (`ARBITER_*`, which holds the signing key and the probe policy itself), its database credentials
 * (`DATABASE_URL`, libpq's `PG*`) and its trace exporter's settings (`OTEL_*`, whose headers may hold a
 * collector's token) are reserved: a probe definition naming one is refused at registration,
 * an older definition naming one fails at call time, and the environment handed to probes never holds
 * them. This file is the one definition of "reserved" all three use.
 */

/** How the reserved names are described to an admin, in error messages. */
export const RESERVED_ENV_NAMES = 'ARBITER_*, OTEL_*, DATABASE_URL (and any name ending in it) and PG*'

// Case-insensitive: on Windows the process environment is, so `arbiter_signing_key` names the same variable.
const RESERVED_ENV_NAME = /^(ARBITER_|OTEL_|PG)|DATABASE_URL$/i

export function isReservedEnvName(name: string): boolean {
  return RESERVED_ENV_NAME.test(name)
}

/** The environment minus every reserved name: what probes may read at call time. */
export function probeEnvironment(
  env: Record<string, string | undefined>,
): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !isReservedEnvName(name)))
}
