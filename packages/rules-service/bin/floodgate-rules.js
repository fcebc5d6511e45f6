#!/usr/bin/env node
// Committed so the bin link exists before the first build (pnpm install links it on a fresh
// clone); the command itself is the built CLI.
import '../dist/cli.js'
