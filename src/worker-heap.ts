import type { ResourceLimits } from 'node:worker_threads'

/**
 * The heap of every worker thread Arbiter starts (log verification, large request bodies, the embedded
 * database): a young generation of 8 MB semi-spaces (V8 sizes the main thread's from the machine's memory, often
 * larger). A worker holds little across collections (a chunk of records being hashed, a body being parsed,
 * PGlite's glue), so a larger one buys it little and costs resident memory for each thread (bench/README.md,
 * "Figures behind the code").
 *
 * Set here rather than with `--max-semi-space-size`: that flag would also size the main thread's young generation,
 * and it overrides what is given here.
 */
export const WORKER_HEAP: ResourceLimits = { maxYoungGenerationSizeMb: 24 }
