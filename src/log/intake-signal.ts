/**
 * In-process wake-up for the sequencer: every commit that wrote audit entries rings it, so a local write is
 * sequenced within milliseconds instead of at the next poll. Writes committed by other replicas are still found
 * by polling; this only shortens the common case.
 */
type Listener = () => void

const listeners = new Set<Listener>()

export function onAuditEntriesCommitted(listener: Listener): () => void {
  listeners.add(listener)
  return () => listeners.delete(listener)
}

export function signalAuditEntriesCommitted(): void {
  for (const listener of listeners) listener()
}
