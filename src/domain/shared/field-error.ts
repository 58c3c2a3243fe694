/**
 * One field a request got wrong: where (a path into the body) and what. Pure decisions that validate input
 * (a fan-out's decomposition, a resolution's answers) return these; the HTTP layer lists them in a problem's
 * `errors`.
 */
export interface FieldError {
  path: string
  message: string
}
