import { writeEmbeddedTemplate } from './db/embedded-template.ts'

/**
 * Run by the build (scripts/build.mjs) on the compiled code: makes the embedded database's template beside it
 * (see db/embedded-template.ts). Not part of the service.
 */
const made = await writeEmbeddedTemplate()
process.stdout.write(made ? 'embedded database template made\n' : 'embedded database template is current\n')
