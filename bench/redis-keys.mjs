/**
 * Delete every key matching `pattern` (SCAN, then DEL per page): what each Redis benchmark
 * leaves under its own prefix.
 *
 * @param client - an ioredis client
 * @param pattern - a SCAN MATCH pattern, e.g. `fgbench123*`
 */
export async function deleteKeys(client, pattern) {
  let cursor = '0'
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 5000)
    cursor = next
    if (keys.length > 0) await client.del(...keys)
  } while (cursor !== '0')
}
