// Loads the packages named on the command line with import(), as an ES module consumer does.
import { checkAll } from './checks.cjs'

await checkAll(process.argv.slice(2), (specifier) => import(specifier))
