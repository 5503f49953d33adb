/**
 * SIGTERM to a server process under load: a few keep-alive connections sending ingest events one
 * after another, one connection holding a request whose body never completes, and, once the server
 * has said it is closing, new connections tried again and again. What each side saw is recorded for
 * the test (`ShutdownUnderLoad.test.ts`) and the measurement (`bench/shutdown.ts`). Free of vitest.
 */
import type { ChildProcess } from "node:child_process"
import { connect, type Socket } from "node:net"

/** One HTTP/1.1 answer as a raw client read it. */
export interface RawAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** What one keep-alive connection saw. */
export interface KeepAliveRun {
  /** Every answer, in order, with the event id of its request. */
  readonly answers: ReadonlyArray<{ readonly eventId: string; readonly answer: RawAnswer }>
  /** Whether the server closed the connection (as opposed to the run ending first). */
  readonly closedByServer: boolean
  /** A socket error, if one ended it (`ECONNRESET`…). */
  readonly error: string | undefined
}

/** The figures of one run. */
export interface ShutdownRun {
  readonly connections: ReadonlyArray<KeepAliveRun>
  /** Event ids answered 202. */
  readonly accepted: ReadonlyArray<string>
  /** Answers (any status) before and after SIGTERM was sent. */
  readonly answeredBeforeSignal: number
  readonly answeredAfterSignal: number
  /** New connections tried after the server first answered `Connection: close`, and how many it accepted. */
  readonly probes: number
  readonly probesAccepted: number
  /** What the connection holding a body open saw: its answer, if any, and whether it was closed. */
  readonly held: { readonly text: string; readonly closed: boolean }
  /** Milliseconds from SIGTERM to the process's exit, and how it exited. */
  readonly exitMillis: number
  readonly exit: string
}

/** Parses the first complete answer at the start of `buffer`, if there is one. */
const parseAnswer = (buffer: string): { readonly answer: RawAnswer; readonly rest: string } | undefined => {
  const end = buffer.indexOf("\r\n\r\n")
  if (end === -1) return undefined
  const [statusLine = "", ...lines] = buffer.slice(0, end).split("\r\n")
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(":")
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  const length = Number(headers["content-length"] ?? "0")
  if (buffer.length < end + 4 + length) return undefined
  return {
    answer: { status: Number(statusLine.split(" ")[1]), headers, body: buffer.slice(end + 4, end + 4 + length) },
    rest: buffer.slice(end + 4 + length)
  }
}

const ingestRequest = (key: string, eventId: string): string => {
  const body = JSON.stringify({
    event_name: "checkout_completed",
    account_id: "acct_shutdown",
    timestamp: new Date().toISOString(),
    event_id: eventId
  })
  return (
    `POST /api/events/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  )
}

/** A keep-alive connection sending one event after another until the server closes it or `stop()`. */
const keepAlive = (port: number, key: string, name: string, onAnswer: () => void) => {
  const answers: Array<{ eventId: string; answer: RawAnswer }> = []
  let error: string | undefined
  let stopped = false
  let closedByServer = false
  let next = 0
  let pending = ""
  let buffer = ""
  const socket: Socket = connect(port, "127.0.0.1")
  const send = () => {
    if (stopped || socket.destroyed) return
    pending = `${name}-${next++}`
    socket.write(ingestRequest(key, pending))
  }
  socket.setEncoding("utf8")
  socket.on("data", (chunk: string) => {
    buffer += chunk
    for (let parsed = parseAnswer(buffer); parsed !== undefined; parsed = parseAnswer(buffer)) {
      buffer = parsed.rest
      answers.push({ eventId: pending, answer: parsed.answer })
      onAnswer()
      if (parsed.answer.headers["connection"]?.toLowerCase() !== "close") send()
    }
  })
  socket.on("error", (cause: NodeJS.ErrnoException) => {
    error = cause.code ?? cause.message
  })
  const closed = new Promise<void>((resolve) =>
    socket.once("close", () => {
      closedByServer = !stopped
      resolve()
    })
  )
  socket.once("connect", send)
  return {
    answers,
    closed,
    stop: () => {
      stopped = true
      socket.destroy()
    },
    result: (): KeepAliveRun => ({ answers, closedByServer, error })
  }
}

/** Whether a new connection is accepted and answered (`GET /healthz`) within `timeoutMillis`. */
const probe = (port: number, timeoutMillis: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1")
    let text = ""
    const done = (accepted: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(accepted)
    }
    const timer = setTimeout(() => done(false), timeoutMillis)
    socket.setEncoding("utf8").on("data", (chunk: string) => {
      text += chunk
      if (text.startsWith("HTTP/1.1 ")) done(true)
    })
    socket.once("connect", () => socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
    socket.once("error", () => done(false))
    socket.once("close", () => done(false))
  })

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/**
 * Loads the server on `port` (ingest key `key`), sends SIGTERM to `child` once every keep-alive
 * connection has had `warmupAnswers` answers, and records what happened until the process exited
 * (or `giveUpMillis` after the signal).
 */
export const runShutdownUnderLoad = async (options: {
  readonly child: ChildProcess
  readonly exited: Promise<unknown>
  readonly port: number
  readonly key: string
  readonly connections: number
  readonly warmupAnswers: number
  readonly giveUpMillis: number
}): Promise<ShutdownRun> => {
  let signalled = false
  let before = 0
  let after = 0
  const onAnswer = () => (signalled ? after++ : before++)
  const runs = Array.from({ length: options.connections }, (_, i) =>
    keepAlive(options.port, options.key, `c${i}-${Date.now()}`, onAnswer)
  )
  // A request whose body never completes: headers promise 1,000 bytes, one arrives.
  const held = connect(options.port, "127.0.0.1")
  let heldText = ""
  let heldClosed = false
  held.setEncoding("utf8").on("data", (chunk: string) => {
    heldText += chunk
  })
  held.on("error", () => undefined)
  held.once("close", () => {
    heldClosed = true
  })
  held.once("connect", () =>
    held.write(
      `POST /api/events/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${options.key}\r\n` +
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
    )
  )

  const warm = Date.now() + options.giveUpMillis
  while (runs.some((run) => run.answers.length < options.warmupAnswers) && Date.now() < warm) await sleep(10)

  let exitedAt: number | undefined
  let how = "still running"
  void options.exited.then((value) => {
    exitedAt = Date.now()
    how = String(value)
  })
  const signalAt = Date.now()
  signalled = true
  options.child.kill("SIGTERM")

  // Once the server has answered `Connection: close`, it is closing: new connections are tried
  // until the process is gone.
  let probes = 0
  let probesAccepted = 0
  const closing = () => runs.some((run) => run.answers.some((a) => a.answer.headers["connection"] === "close"))
  const giveUp = signalAt + options.giveUpMillis
  while (exitedAt === undefined && Date.now() < giveUp) {
    if (closing()) {
      probes++
      if (await probe(options.port, 250)) probesAccepted++
    }
    // Gently: the machine's time goes to the server's stop, not to the probes.
    await sleep(20)
  }
  await Promise.race([Promise.all(runs.map((run) => run.closed)), sleep(1_000)])
  for (const run of runs) run.stop()
  const heldClosedByServer = heldClosed
  held.destroy()
  const connections = runs.map((run) => run.result())
  return {
    connections,
    accepted: connections.flatMap((run) => run.answers.filter((a) => a.answer.status === 202).map((a) => a.eventId)),
    answeredBeforeSignal: before,
    answeredAfterSignal: after,
    probes,
    probesAccepted,
    held: { text: heldText, closed: heldClosedByServer },
    exitMillis: (exitedAt ?? Date.now()) - signalAt,
    exit: how
  }
}
