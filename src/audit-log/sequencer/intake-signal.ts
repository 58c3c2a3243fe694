/**
 * In-process wake-up for the sequencer: every commit that wrote audit entries rings it, so an idle sequencer
 * sequences a local write at once instead of at its next poll (a sequencer lingering after a batch lets the
 * entries gather until the linger ends). Writes committed by other replicas are found by polling.
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
