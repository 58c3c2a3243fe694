import type { CaseKindDocs } from '../../http/case-kinds.ts'

/** What the API document says of the fan-out kind's operations. */
export const fanoutDocs: CaseKindDocs = {
  operationIds: {
    'POST /v1/fanouts': 'createFanout',
    'GET /v1/fanouts': 'listFanouts',
    'GET /v1/fanouts/{id}': 'getFanout',
    'POST /v1/fanouts/{id}/results': 'submitFanoutResult',
    'POST /v1/fanouts/{id}/reconcile': 'reconcileFanout',
    'POST /v1/fanouts/{id}/resolution': 'resolveFanout',
    'GET /v1/audit/fanouts/{id}': 'getFanoutStory',
  },
  tags: { fanouts: 'Reconciling the claims of parallel workers' },
  tagOrder: 2,
}
