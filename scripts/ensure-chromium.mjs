// The admin page of the rules service is tested in Debian's chromium (driven by
// playwright-core, which never downloads a browser of its own). Install it when missing.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'

const BINARY = '/usr/bin/chromium'

if (existsSync(BINARY)) process.exit(0)

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0
if (!isRoot) {
  const msg = `${BINARY} is missing: install Debian's chromium (sudo apt-get install -y chromium).`
  if (process.env.CI === 'true') {
    console.error(msg)
    process.exit(1)
  }
  console.warn(`${msg} The browser test will be skipped.`)
  process.exit(0)
}

console.log(`${BINARY} is missing; installing Debian's chromium with apt-get…`)
const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env })
execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium'], {
  stdio: 'inherit',
  env,
})
