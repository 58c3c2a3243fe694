#!/usr/bin/env node
// A webhook receiver: verifies each delivery with @arbiter/client and prints `<webhook-id> <type>` per event.
// WEBHOOK_SECRET is the `secret` of POST /v1/webhooks; the port is the first argument (default 8090).
import { createServer } from 'node:http'
import { verifyWebhook } from '@arbiter/client'

const port = Number(process.argv[2] ?? 8090)
const seen = new Set() // delivery is at least once: the same webhook-id may come again

createServer(async (req, res) => {
  if (req.method !== 'POST') return res.writeHead(405, { allow: 'POST' }).end()
  const chunks = []
  for await (const chunk of req) chunks.push(chunk)
  let event
  try {
    event = verifyWebhook(req.headers, Buffer.concat(chunks), process.env.WEBHOOK_SECRET ?? '')
  } catch (err) {
    console.error(`refused: ${err.message}`)
    return res.writeHead(400).end()
  }
  const id = req.headers['webhook-id']
  if (!seen.has(id)) {
    seen.add(id)
    console.log(id, event.type)
  }
  res.writeHead(204).end()
}).listen(port, '127.0.0.1')
