import type { CaseKindModule } from '../../../src/http/case-kinds.ts'
import { TALLY_AUDIT_KINDS, TALLY_DIRECTIVES, TALLY_VERDICTS, tallyCase } from './kind.ts'
import { tallyRoutes } from './routes.ts'
import { tallyManifestSchema } from './schemas.ts'

/** What the tally's registry line would say: `buildApp({ extraCaseKinds: [tallyModule] })` serves it. */
export const tallyModule: CaseKindModule = {
  kind: tallyCase,
  idField: 'tally_id',
  vocabulary: { auditKinds: TALLY_AUDIT_KINDS, verdicts: TALLY_VERDICTS, directives: TALLY_DIRECTIVES },
  manifestSchema: tallyManifestSchema,
  routes: tallyRoutes,
}
