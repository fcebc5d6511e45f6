// Running commands from the packed-package tests.
import { execFile } from 'node:child_process'

export interface Run {
  readonly code: number
  readonly output: string
}

/** Runs a command to its end; a non-zero exit is a result, not an exception. */
export function run(
  file: string,
  args: readonly string[],
  cwd: string,
  env?: NodeJS.ProcessEnv,
): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { cwd, maxBuffer: 64 * 1024 * 1024, ...(env !== undefined && { env }) },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : undefined
        if (code === undefined) reject(err ?? new Error(`${file} did not start`))
        else resolve({ code, output: `${stdout}${stderr}` })
      },
    )
  })
}

/** {@link run}, throwing with the output when the command fails. */
export async function runOk(
  file: string,
  args: readonly string[],
  cwd: string,
  env?: NodeJS.ProcessEnv,
): Promise<string> {
  const result = await run(file, args, cwd, env)
  if (result.code !== 0) {
    throw new Error(`${file} ${args.join(' ')} exited ${result.code}:\n${result.output}`)
  }
  return result.output
}
