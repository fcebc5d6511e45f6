import { projectConfig } from '../../vitest.shared.ts'

// Embedded PostgreSQL (PGlite) runs initdb in WebAssembly: ~1 s idle, far more on a busy machine.
export default projectConfig({ hookTimeout: 60_000 })
