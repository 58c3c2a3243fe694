import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { AppConfig } from '../../../app-config.ts'
import type { SigningKey } from '../../../crypto/signing-key.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The configuration the app was built with (it never reads the environment itself). */
    config: AppConfig
    /** The key manifests and checkpoints are signed with. */
    signingKey: SigningKey
  }
}

export interface SettingsOptions {
  config: AppConfig
  signingKey: SigningKey
}

async function settingsPlugin(app: FastifyInstance, options: SettingsOptions) {
  app.decorate('config', options.config)
  app.decorate('signingKey', options.signingKey)
}

export default fp(settingsPlugin, { name: 'arbiter-settings' })
