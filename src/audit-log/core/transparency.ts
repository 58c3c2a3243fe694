/** The RFC 9162 / signed-note package the service shares with its clients (packages/transparency). */
export * from '@arbiter/transparency'
