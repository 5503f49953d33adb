/**
 * Spawns the `accord` CLI as a process (`node --import tsx runtimes/cli/main.ts`), as a user runs
 * it with `npm run accord --`, and collects its exit code and output.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

export const root = fileURLToPath(new URL("../../../", import.meta.url))
export const entry = join(root, "runtimes/cli/main.ts")

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The environment without anything Accord reads, so the host's variables never leak in. */
export const cleanEnv = (): Record<string, string> =>
  Object.fromEntries(
    Object.entries(process.env).filter(([name, value]) =>
      value !== undefined && !/^(ACCORD_|SERVICE_|DATABASE_URL$|PORT$|HOST$)/.test(name)
    ) as Array<[string, string]>
  )

export const runCli = (
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly cwd?: string; readonly timeoutMs?: number } = {}
): Promise<CliResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", entry, ...args], {
      cwd: options.cwd ?? root,
      env: { ...cleanEnv(), NO_COLOR: "1", ...options.env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 60_000)
    child.on("error", reject)
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

/** A fresh temporary folder with the given files. */
export const tempFiles = (files: Record<string, string>): string => {
  const dir = mkdtempSync(join(tmpdir(), "accord-cli-"))
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  return dir
}

/** No stack trace: no `    at ` frame and no `Error:` dump. */
export const hasStackTrace = (text: string): boolean => /\n\s+at\s|\bat .*\.ts:\d+/.test(text)
