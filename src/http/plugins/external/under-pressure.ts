import underPressure from '@fastify/under-pressure'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../../../errors.ts'
import { isOperationsRoute } from '../../route-classes.ts'

export interface UnderPressureOptions {
  /** Shed when the event loop lags more than this (ms). */
  maxEventLoopDelayMs: number
  /** Shed when the V8 heap exceeds this (bytes); 0 disables. */
  maxHeapUsedBytes: number
}

/** Load shedding on event-loop lag and heap use: a 503 problem + Retry-After instead of an unbounded queue. */
async function underPressurePlugin(app: FastifyInstance, options: UnderPressureOptions) {
  await app.register(underPressure, {
    maxEventLoopDelay: options.maxEventLoopDelayMs,
    maxHeapUsedBytes: options.maxHeapUsedBytes,
    // Liveness, readiness and metrics stay answerable under load; everything else is shed.
    pressureHandler: async (request, _reply, type) => {
      if (!isOperationsRoute(request)) {
        throw new AppError('OVERLOADED', `the service is shedding load (${type}); retry later`)
      }
    },
  })
}

export default fp(underPressurePlugin, { name: 'arbiter-under-pressure' })
