/**
 * Which API routes this Arbiter serves, read once from its public OpenAPI document. The console is built for
 * the whole contract; a view whose routes a server does not have yet says so instead of failing obscurely.
 */
let paths: Promise<Set<string>> | null = null

export function servedPaths(): Promise<Set<string>> {
  paths ??= fetch('/openapi.json', { headers: { accept: 'application/json' } })
    .then((response) => (response.ok ? response.json() : { paths: {} }))
    .then((doc: { paths?: Record<string, unknown> }) => new Set(Object.keys(doc.paths ?? {})))
    .catch(() => {
      paths = null // ask again next time: the server may have been briefly unreachable
      return new Set<string>()
    })
  return paths
}

export async function serves(path: string): Promise<boolean> {
  return (await servedPaths()).has(path)
}
