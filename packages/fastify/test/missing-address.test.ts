import { describeMissingAddressWarning } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/fastify'
import Fastify from 'fastify'

describeMissingAddressWarning('fastify', async (socketPath, logger) => {
  const app = Fastify()
  await app.register(rateLimit, { rules: [{ id: 'per-ip', limit: 1, window: '1m' }], logger })
  app.get('/', (_request, reply) => void reply.send('ok'))
  await app.listen({ path: socketPath })
  return { close: () => app.close() }
})
