import type { CaseKindDocs } from '../../http/case-kinds.ts'

/** What the API document says of the review kind's operations. */
export const reviewDocs: CaseKindDocs = {
  operationIds: {
    'POST /v1/reviews': 'createReview',
    'GET /v1/reviews': 'listReviews',
    'GET /v1/reviews/{id}': 'getReview',
    'POST /v1/reviews/{id}/verdicts': 'submitReviewVerdict',
    'POST /v1/reviews/{id}/revisions': 'createReviewRevision',
    'POST /v1/reviews/{id}/decide': 'decideReview',
    'GET /v1/audit/reviews/{id}': 'getReviewStory',
  },
  tags: { reviews: 'Judge panels routed by the book' },
  tagOrder: 3,
}
