'use strict'
// Loads the packages named on the command line with require(), as a CommonJS consumer does.
const { checkAll } = require('./checks.cjs')

void checkAll(process.argv.slice(2), async (specifier) => require(specifier))
