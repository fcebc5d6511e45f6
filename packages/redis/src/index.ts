/**
 * @module @floodgate/redis
 * Redis and Redis Cluster stores for Floodgate: one limit shared by a fleet of hosts.
 */
export { RedisStore, createRedisStore } from './redis-store.js'
export type { RedisStoreOptions, TimeSource } from './redis-store.js'
export type { RedisConnectionOptions, RedisClient } from './connection.js'
export { redisKey } from './redis-key.js'
export { SyncedStore, createSyncedStore } from './synced-store.js'
export type { SyncedStoreOptions } from './synced-store.js'
