/**
 * Memory PostgreSQL may take inside PGlite. WebAssembly memory only grows (freed pages stay resident), so each
 * of these bounds the process for good, not just one query. Passed on PostgreSQL's command line at every start,
 * so they hold for a directory created by an older version too.
 */
export const EMBEDDED_SETTINGS: Readonly<Record<string, string>> = {
  // The buffer cache (128MB by default), resident in full from the start. Pages it does not hold are one read
  // away in the OS page cache.
  shared_buffers: '32MB',
  // Per sort or hash step of a query (default 4MB); a query with several steps takes several.
  work_mem: '4MB',
  // CREATE INDEX and VACUUM (default 64MB): migrations on a grown database must not balloon the heap.
  maintenance_work_mem: '16MB',
  // Temporary tables (default 8MB): Arbiter creates none.
  temp_buffers: '1MB',
  // Shared memory is sized for this many sessions (default 100); PGlite runs one.
  max_connections: '4',
  // ANALYZE (run by embedded-maintenance.ts) holds a sample of 300 × this many rows of a table in memory: at the
  // default 100, 30,000 rows of manifests or audit records, tens of megabytes the WebAssembly memory keeps for
  // good. 10 samples 3,000, enough for the plans Arbiter's statements take (lookups by key and index ranges).
  default_statistics_target: '10',
}

/** The settings as PostgreSQL command-line arguments (`-c name=value`). */
export function settingsArguments(): string[] {
  return Object.entries(EMBEDDED_SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`])
}
