import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { describe, it } from 'node:test'
import semver from 'semver'
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
    const cmd = JSON.parse(runtime.find((line) => line.startsWith('CMD '))!.slice(4)) as string[]
    assert.equal(cmd[0], 'node')
    assert.equal(cmd.at(-1), 'dist/server.js', 'the image runs the compiled JavaScript')
    const pkg = JSON.parse(await readFile('package.json', 'utf8'))
    assert.equal(
      cmd.join(' '),
      pkg.scripts.start,
      'the image starts node with the heap settings npm start uses',
    )
    assert.ok(
      runtime.some((line) => /^COPY --from=\w+ \/app\/dist/.test(line)),
      'the runtime stage takes the build stage output',
    )
    assert.ok(
      instructions.some((line) => /^RUN npm run build\b/.test(line)),
      'a stage compiles the sources',
    )
  })

  it('starts production on compiled JavaScript, built by npm ci and before npm start', async () => {
    const pkg = JSON.parse(await readFile('package.json', 'utf8'))
    assert.match(pkg.scripts.start, /^node (--[a-z-]+=\d+ )*dist\/server\.js$/)
    assert.match(
      pkg.scripts.start,
      /--max-old-space-size=\d+/,
      'the heap limit that sets how soon V8 collects',
    )
    // The flag would size every worker thread's young generation too, over the one they are given in the code.
    assert.doesNotMatch(pkg.scripts.start, /--max-semi-space-size/)
    assert.doesNotMatch(await readFile('Dockerfile', 'utf8'), /^CMD .*--max-semi-space-size/m)
    assert.equal(pkg.scripts.arbiter, 'node dist/cli.js')
    assert.match(pkg.scripts.prepare, /scripts\/build\.mjs/, 'npm ci builds (prepare)')
    assert.match(
      pkg.scripts.prestart,
      /scripts\/build\.mjs --if-stale$/,
      'npm start rebuilds what changed first',
    )
    assert.equal(pkg.dependencies.tsx, undefined, 'no TypeScript runner in production dependencies')
    assert.ok(pkg.devDependencies.tsx, 'tests and tools still run sources through tsx')
  })

  it('runs the CLI on the built JavaScript: a bin for npx, and no command compiles first', async () => {
    const pkg = JSON.parse(await readFile('package.json', 'utf8'))
    assert.deepEqual(pkg.bin, { arbiter: 'dist/cli.js' })
    assert.match(await readFile('src/cli.ts', 'utf8'), /^#!\/usr\/bin\/env node\n/, 'the bin runs with node')
    assert.equal(pkg.scripts.prearbiter, undefined, 'npm run arbiter runs no build first')
    // npx installs the package into its cache as a link and runs its prepare: it must build only what is stale.
    assert.match(pkg.scripts.prepare, /--if-stale$/)
    assert.match(pkg.scripts.pretest, /--if-stale$/)
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

  it('scales to several replicas behind one balancer: no fixed host port on the replicas', async () => {
    const compose = parse(await readFile('docker-compose.yml', 'utf8'))
    const { arbiter, balancer } = compose.services
    assert.equal(arbiter.ports, undefined, '`--scale arbiter=3` cannot bind one host port three times')
    assert.deepEqual(arbiter.expose, ['8080'])
    assert.deepEqual(balancer.ports, ['8080:8080'])
    assert.equal(balancer.depends_on.arbiter.condition, 'service_healthy')
    const mount = balancer.volumes.find((volume: string) => volume.startsWith('./deploy/nginx.conf:'))
    assert.ok(mount, 'the balancer configuration is mounted from the repository')
    const nginx = await readFile('deploy/nginx.conf', 'utf8')
    assert.match(nginx, /server arbiter:8080;/, 'the balancer sends to every replica of the service')
    assert.match(
      nginx,
      /location = \/v1\/manifests\/stream \{[^}]*proxy_buffering off;/,
      'SSE is not buffered',
    )
    assert.doesNotMatch(
      JSON.stringify(compose),
      /must share|same signing key/i,
      'the compose file tells what the README tells: replicas may sign with different keys',
    )
  })

  it('declares the Node versions every locked dependency supports, so npm ci warns of no engine', async () => {
    const lock = JSON.parse(await readFile('package-lock.json', 'utf8'))
    const ours: string = lock.packages[''].engines.node
    const pkg = JSON.parse(await readFile('package.json', 'utf8'))
    assert.equal(pkg.engines.node, ours, 'the lockfile is current')
    assert.ok(
      semver.satisfies(process.version, ours),
      `the Node running the tests (${process.version}) is declared`,
    )
    const narrower = Object.entries(lock.packages as Record<string, { engines?: { node?: string } }>)
      .filter(([, entry]) => entry.engines?.node && !semver.subset(ours, entry.engines.node))
      .map(([path, entry]) => `${path} wants node ${entry.engines!.node}`)
    assert.deepEqual(narrower, [], `engines says ${ours}, but some dependencies need more`)
  })
})
