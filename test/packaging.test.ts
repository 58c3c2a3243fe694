import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { describe, it } from 'node:test'
import { parse } from 'yaml'

// No Docker engine runs here: these read the packaging files the way the engine would and check what matters.
describe('packaging', () => {
  it('builds a non-root, health-checked image with production dependencies only', async () => {
    const dockerfile = await readFile('Dockerfile', 'utf8')
    const instructions = dockerfile
      .replace(/\\\n/g, ' ')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#'))
    const stages = instructions.filter((line) => /^FROM /i.test(line))
    assert.ok(stages.length >= 2, 'multi-stage')
    for (const line of instructions) {
      assert.match(
        line,
        /^(FROM|WORKDIR|COPY|RUN|ENV|USER|EXPOSE|VOLUME|HEALTHCHECK|CMD|ARG|LABEL)\b/i,
        `unknown instruction: ${line}`,
      )
    }
    const runtime = instructions.slice(instructions.lastIndexOf(stages[stages.length - 1]!))
    assert.ok(
      runtime.some((line) => /^USER (?!root)/.test(line)),
      'runs as a non-root user',
    )
    assert.ok(
      runtime.some((line) => /^HEALTHCHECK .*\/readyz/.test(line)),
      'health-checked on /readyz',
    )
    assert.ok(
      runtime.some((line) => /HOST=0\.0\.0\.0/.test(line)),
      'listens on all interfaces via HOST',
    )
    assert.ok(
      instructions.some((line) => /npm ci --omit=dev/.test(line)),
      'production dependencies only',
    )
    const cmd = JSON.parse(runtime.find((line) => line.startsWith('CMD '))!.slice(4))
    assert.deepEqual(cmd, ['node', '--import', 'tsx', 'src/server.ts'])
    const pkg = JSON.parse(await readFile('package.json', 'utf8'))
    assert.ok(pkg.dependencies.tsx, 'tsx runs the service, so it must be a production dependency')
  })

  it('wires Arbiter to a health-checked PostgreSQL by DATABASE_URL', async () => {
    const compose = parse(await readFile('docker-compose.yml', 'utf8'))
    const { postgres, arbiter } = compose.services
    assert.ok(postgres.healthcheck.test.join(' ').includes('pg_isready'))
    assert.equal(arbiter.depends_on.postgres.condition, 'service_healthy')
    assert.match(arbiter.environment.DATABASE_URL, /^postgres:\/\/\w+:\w+@postgres:5432\/\w+$/)
    assert.equal(arbiter.environment.HOST, '0.0.0.0')
    assert.equal(arbiter.build, '.')
  })
})
