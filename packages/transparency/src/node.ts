// The Node build: the same API, on node:crypto (installed before anything else here runs).
import './node-platform.ts'

export * from './index.ts'
