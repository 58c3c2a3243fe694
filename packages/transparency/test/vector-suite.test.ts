import { describe, it } from 'node:test'
import '../src/node.ts'
import { vectorCases } from './vector-suite.ts'
import { readVectorFiles } from './vectors.ts'

describe('the published vectors (Node build)', () => {
  for (const vectorCase of vectorCases(readVectorFiles())) it(vectorCase.name, () => vectorCase.run())
})
