/**
 * For tests that spawn a server process: a free TCP port on loopback, and a plain sleep.
 */
import { type AddressInfo, createServer } from "node:net"

/** A port nothing listens on right now (the OS picks it; the probe is closed before returning). */
export const freePort = (): Promise<number> =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
