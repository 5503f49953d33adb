/**
 * Spawns the `accord` CLI as a process (`node --import tsx runtimes/cli/main.ts`), as a user runs
 * it with `npm run accord --`, and collects its exit code and output.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createServer as createNetServer } from "node:net"
import { fileURLToPath } from "node:url"
import * as Effect from "effect/Effect"
import { adminKey, jsonHeaders, request, workspaceId } from "../../support/http.ts"

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
    Object.entries(process.env).filter(
      ([name, value]) => value !== undefined && !/^(ACCORD_|SERVICE_|DATABASE_URL$|PORT$|HOST$)/.test(name)
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

/** Runs the CLI from an Effect test. */
export const cli = (
  args: ReadonlyArray<string>,
  options?: Parameters<typeof runCli>[1]
): import("effect/Effect").Effect<CliResult> => Effect.promise(() => runCli(args, options))

/** A key of `scope` created with the test server's admin key. */
export const createApiKey = (url: string, scope: "ingest" | "developer:read" | "admin") =>
  Effect.map(
    request(`${url}/api/admin/v1/workspaces/${workspaceId}/api-keys`, {
      method: "POST",
      headers: jsonHeaders(adminKey),
      body: JSON.stringify({ scope })
    }),
    (reply) => reply.json.secret as string
  )

/** A loopback port nothing listens on. */
export const closedPort = (): Promise<number> =>
  new Promise((resolve) => {
    const server = createNetServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })

/** Spawned CLI processes share 2 cores with other suites: give each test room. */
export const processTestTimeout = 180_000
