import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import net from 'node:net'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** A port nobody listens on right now (the kernel picks it; it is released before the server takes it). */
export async function freePort(): Promise<number> {
  const server = net.createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as net.AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

export interface ChildServerOptions {
  env: Record<string, string>
  port: number
  /** How long to wait for `/readyz` to answer 200. */
  readyTimeoutMs?: number
}

export interface ChildServer {
  process: ChildProcess
  baseUrl: string
  /** Everything the process wrote on stdout and stderr so far. */
  output(): string
  /** `kill -9`: no shutdown hook runs, in-flight transactions die with the process. */
  killHard(): Promise<void>
  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
  stop(graceMs?: number): Promise<void>
}

/**
 * Runs the real service, `node --import tsx src/server.ts`, as a child process with the given environment
 * (nothing of the test process's environment leaks in except PATH and HOME), and waits until it is ready.
 */
export async function startChildServer(options: ChildServerOptions): Promise<ChildServer> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      HOST: '127.0.0.1',
      PORT: String(options.port),
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const chunks: string[] = []
  child.stdout!.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')))
  child.stderr!.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')))
  const exited = once(child, 'exit')
  let hasExited = false
  void exited.then(() => {
    hasExited = true
  })
  const baseUrl = `http://127.0.0.1:${options.port}`
  const server: ChildServer = {
    process: child,
    baseUrl,
    output: () => chunks.join(''),
    async killHard() {
      if (hasExited) return
      child.kill('SIGKILL')
      await exited
    },
    async stop(graceMs = 10_000) {
      if (hasExited) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      await exited
      clearTimeout(timer)
    },
  }

  const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000)
  for (;;) {
    if (hasExited) {
      throw new Error(`the server exited before it was ready:\n${server.output()}`)
    }
    try {
      const response = await request(`${baseUrl}/readyz`, { headersTimeout: 2_000, bodyTimeout: 2_000 })
      await response.body.dump()
      if (response.statusCode === 200) return server
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await server.killHard()
      throw new Error(`the server was not ready in time:\n${server.output()}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
