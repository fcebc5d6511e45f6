/**
 * Poll (bounded) until `probe` holds: for reconnects and releases whose timing a test cannot
 * know. Throws when `ms` pass first.
 */
export async function eventually(probe: () => Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 25))
  }
}
