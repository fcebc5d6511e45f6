import { describe, expect, it, vi } from 'vitest'
import { OptionsError } from '../../errors.js'
import { fileRules } from './file-rules.js'
import { isInstalled } from './optional-peer.js'

// An install without the optional `yaml` package, as a JSON-only user has it.
vi.mock('./optional-peer.js', () => ({ isInstalled: (name: string) => name !== 'yaml' }))

describe('fileRules without the yaml package', () => {
  it('refuses a YAML file at once, naming the package to install', () => {
    expect(isInstalled('yaml')).toBe(false)
    expect(() => fileRules('/etc/floodgate/rules.yaml')).toThrow(OptionsError)
    expect(() => fileRules('/etc/floodgate/rules.yml')).toThrow(
      /^fileRules: \/etc\/floodgate\/rules\.yml is read as YAML \(every extension but \.json\), which needs the 'yaml' package: npm install yaml, or write the rules as JSON in a \.json file \(FG_ERR_OPTIONS_INVALID/,
    )
  })

  it('reads JSON without it', () => {
    const source = fileRules('/etc/floodgate/rules.json', { watch: false })
    expect(typeof source.start).toBe('function')
  })
})
