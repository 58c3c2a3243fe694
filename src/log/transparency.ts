/**
 * The one place the service imports the RFC 9162 / signed-note package from, so switching from the source path
 * to the workspace package name is a one-line change.
 */
export * from '../../packages/transparency/src/index.ts'
