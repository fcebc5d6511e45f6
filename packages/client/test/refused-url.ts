import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A loopback URL on a port that was just free: connecting to it is refused (ECONNREFUSED). */
export async function refusedUrl(): Promise<string> {
  const probe = createServer()
  probe.listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const url = `http://127.0.0.1:${(probe.address() as AddressInfo).port}/a`
  probe.close()
  await once(probe, 'close')
  return url
}
