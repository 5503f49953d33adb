/**
 * Runs the `accord` CLI and collects its exit code and output: `runCli` spawns it as a process
 * (`node --import tsx runtimes/cli/main.ts`), as a user runs it with `npm run accord --`;
 * `runCliInProcess` runs the same composition (`runtimes/cli/Cli.ts` `main`) in the test's own
 * process, without the seconds a process spends loading its modules. Tests of the process itself
 * (exit status, the entry, stdio) spawn; tests of what a command does run in process.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createServer as createNetServer } from "node:net"
import { fileURLToPath } from "node:url"
import { format } from "node:util"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { main } from "../../../runtimes/cli/Cli.ts"
import { adminKey, jsonHeaders, request, workspaceId } from "../../support/http.ts"
import { nodeArgs } from "../../../scripts/entrypoint.ts"

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
    const child = spawn(process.execPath, [...nodeArgs(entry), ...args], {
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

let inProcessQueue: Promise<unknown> = Promise.resolve()

/**
 * Runs the CLI in this process on `args`, as `runCli` does in a child: the environment is only
 * `options.env` over the host's non-Accord variables and `NO_COLOR=1` while it runs, and what it
 * writes to the console is its stdout (`log`, `info`, `debug`) and stderr (`warn`, `error`). The
 * environment and the console are the process's own, so runs take turns (concurrent calls queue);
 * a run that outlasts `timeoutMs` is interrupted and answers code `null`, as a killed child does.
 */
export const runCliInProcess = (
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly timeoutMs?: number } = {}
): Promise<CliResult> => {
  const next = inProcessQueue.then(() => runOnce(args, options))
  inProcessQueue = next.catch(() => undefined)
  return next
}

const consoleMethods = ["log", "info", "debug", "warn", "error"] as const

const runOnce = async (
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly timeoutMs?: number }
): Promise<CliResult> => {
  const savedEnv = { ...process.env }
  const env: Record<string, string> = { ...cleanEnv(), NO_COLOR: "1", ...options.env }
  for (const name of Object.keys(process.env)) if (!(name in env)) delete process.env[name]
  Object.assign(process.env, env)
  let stdout = ""
  let stderr = ""
  const console = globalThis.console
  const savedConsole = consoleMethods.map((method) => [method, console[method]] as const)
  console.log =
    console.info =
    console.debug =
      (...data: Array<unknown>) => {
        stdout += `${format(...data)}\n`
      }
  console.warn = console.error = (...data: Array<unknown>) => {
    stderr += `${format(...data)}\n`
  }
  try {
    const code = await Effect.runPromise(
      Effect.timeout(main([process.execPath, entry, ...args]), Duration.millis(options.timeoutMs ?? 60_000)).pipe(
        Effect.option,
        Effect.map(Option.getOrNull)
      )
    )
    return { code, stdout, stderr }
  } finally {
    for (const [method, original] of savedConsole) console[method] = original
    for (const name of Object.keys(process.env)) if (!(name in savedEnv)) delete process.env[name]
    Object.assign(process.env, savedEnv)
  }
}

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

/** Runs the CLI in this process (`runCliInProcess`) from an Effect test. */
export const cliInProcess = (
  args: ReadonlyArray<string>,
  options?: Parameters<typeof runCliInProcess>[1]
): Effect.Effect<CliResult> => Effect.promise(() => runCliInProcess(args, options))

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
