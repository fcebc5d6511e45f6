/**
 * @module @floodgate/redis
 * Redis and Redis Cluster stores for Floodgate: one limit shared by a fleet of hosts.
 */
export { RedisStore, createRedisStore } from './redis-store.js'
export type { RedisConnectionOptions, RedisStoreOptions, RedisClient } from './redis-store.js'
export { redisKey, hashTag } from './redis-key.js'
export { decideScript } from './scripts/decide-script.js'
export { SyncedStore, createSyncedStore } from './synced-store.js'
export type { SyncedStoreOptions } from './synced-store.js'
