import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../../../errors.ts'
import { isUncountedRoute } from '../../route-classes.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Runs a short database step that comes before a request is admitted (the API key's lookup) under the same
     * count, so that step cannot queue on the pool without bound either; 503 when the service is full.
     */
    withAdmission<T>(work: () => Promise<T>): Promise<T>
  }
}

export interface AdmissionOptions {
  /** Shed when more requests than this already wait for a database connection. */
  maxDbWaiting: number
}

/**
 * Admission control, counted synchronously: pg's waitingCount only grows once a request reaches the pool, so a
 * burst arriving in one event-loop turn would all pass a check on it alone. Requests beyond the pool plus its
 * queue are shed with 503 + Retry-After instead of queueing without bound.
 *
 * Only a request that has fully arrived competes for a slot: admission is taken in `preHandler`, after the body
 * is read and validated. A client dribbling a body (or many of them) holds no slot, so it cannot make others wait
 * or be shed; the request timeout cuts it off (src/app.ts). Unknown routes and callers without a valid key were
 * answered in `onRequest`, before any body was read.
 */
async function admissionPlugin(app: FastifyInstance, options: AdmissionOptions) {
  const capacity = app.config.dbPoolMax + options.maxDbWaiting
  let admitted = 0
  const admit = () => {
    if (app.db.waitingCount > options.maxDbWaiting || admitted >= capacity) {
      throw new AppError('OVERLOADED', 'the service is shedding load (database queue full); retry later')
    }
  }
  app.decorate('withAdmission', async <T>(work: () => Promise<T>): Promise<T> => {
    admit()
    admitted += 1
    try {
      return await work()
    } finally {
      admitted -= 1
    }
  })
  app.addHook('preHandler', async (request, reply) => {
    if (isUncountedRoute(request)) return
    admit()
    // A client that hung up while its request was read (or queued behind its own pipelined requests) has no
    // close left to come: it takes no slot, so none can leak.
    const socket = request.raw.socket
    if (socket?.destroyed) return
    admitted += 1
    // Released once, when the response closes or the socket does: a pipelined request queued behind others
    // never gets its own 'close' if the client hangs up first.
    let released = false
    const release = () => {
      if (released) return
      released = true
      admitted -= 1
      socket?.off('close', release)
    }
    reply.raw.once('close', release)
    socket?.once('close', release)
  })
}

export default fp(admissionPlugin, { name: 'arbiter-admission', dependencies: ['arbiter-db'] })
