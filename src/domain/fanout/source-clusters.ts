/**
 * Echo detection: claims that cite a common source are one witness, however many workers repeated
 * it. Claims are grouped into clusters by shared source identity, transitively (A and B cite s1, B and
 * C cite s2: A, B and C are one cluster), so agreement can be counted in clusters instead of claims.
 *
 * Cost: one union–find pass over every (claim, source) pair — O(S·α(S)) for S cited sources, i.e.
 * linear in the size of the claims for any practical purpose. No pair of claims is ever compared.
 */
import { type SourceRef, sourceIdentity } from './source-identity.ts'

/** Union–find over claim indices with path halving and union by size. */
class DisjointSets {
  private readonly parent: number[]
  private readonly size: number[]

  constructor(count: number) {
    this.parent = Array.from({ length: count }, (_, i) => i)
    this.size = new Array<number>(count).fill(1)
  }

  find(element: number): number {
    let node = element
    while (this.parent[node] !== node) {
      const grandparent = this.parent[this.parent[node]!]!
      this.parent[node] = grandparent
      node = grandparent
    }
    return node
  }

  union(a: number, b: number): void {
    let rootA = this.find(a)
    let rootB = this.find(b)
    if (rootA === rootB) return
    if (this.size[rootA]! < this.size[rootB]!) [rootA, rootB] = [rootB, rootA]
    this.parent[rootB] = rootA
    this.size[rootA]! += this.size[rootB]!
  }
}

export interface SourceClusters {
  /** `clusterOf[i]` identifies claim i's cluster; equal numbers mean one cluster. */
  clusterOf: number[]
  /** For each source identity, the indices of the claims citing it, ascending, each once. */
  citations: Map<string, number[]>
}

/** Clusters the claims (by index) of one fact by the sources they cite. */
export function clusterClaimsBySource(claims: readonly { sources: readonly SourceRef[] }[]): SourceClusters {
  const sets = new DisjointSets(claims.length)
  const citations = new Map<string, number[]>()
  claims.forEach((claim, index) => {
    for (const source of claim.sources) {
      const identity = sourceIdentity(source)
      const citing = citations.get(identity)
      if (citing === undefined) {
        citations.set(identity, [index])
      } else {
        // Claims are visited in index order, so a claim citing one source twice is the last entry.
        if (citing[citing.length - 1] !== index) citing.push(index)
        sets.union(citing[0]!, index)
      }
    }
  })
  return { clusterOf: claims.map((_, index) => sets.find(index)), citations }
}

/** How many clusters the given claims span: a position's `independent_sources`. */
export function countClusters(clusterOf: readonly number[], claimIndices: readonly number[]): number {
  return new Set(claimIndices.map((index) => clusterOf[index]!)).size
}
