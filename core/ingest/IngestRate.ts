/**
 * The one token bucket of the service's request rates (the specs leave request-rate limits open;
 * docs/decisions.md "Rate limit"): a bucket per key, `limit` tokens refilled evenly over one period
 * (a second unless told otherwise), one token per request, a request without a token refused with
 * the time until the next. The ingest route keys it by ingest key; the runtime routes
 * (`adapters/http/RuntimeGuard.ts`) by client address and by runtime session, each in buckets of
 * their own.
 *
 * It is synchronous on purpose: it runs for every event, on a path that does no other waiting
 * between reading the key and reading the body. Each instance keeps its own buckets, in memory (a
 * deployment of N instances behind a load balancer allows up to N times the rate per key).
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"

/** The per-key token bucket that rate-limits the ingest route. */
export interface IngestRateService {
  /**
   * Takes one token from `key`'s bucket of `limit` per `periodMillis` (default one second) at `now`
   * (epoch ms): `0` when the request may go on, otherwise the milliseconds until a token is back
   * (nothing is taken).
   */
  readonly consume: (key: string, limit: number, now: number, periodMillis?: number) => number
}

/** The service tag of the ingest rate limiter. */
export class IngestRate extends Context.Tag("@accord/core/ingest/IngestRate")<IngestRate, IngestRateService>() {}

interface Bucket {
  tokens: number
  lastRefill: number
}

/**
 * The most keys whose buckets are kept; past it the bucket used least recently is dropped (a key
 * that comes back starts with a full bucket).
 */
export const defaultMaxKeys = 10_000

/**
 * Buckets in memory.
 */
export const makeMemory = (maxKeys: number = defaultMaxKeys): IngestRateService => {
  const buckets = new Map<string, Bucket>()
  return {
    consume: (key, limit, now, periodMillis = 1000) => {
      const refillMillis = periodMillis / limit
      let bucket = buckets.get(key)
      if (bucket === undefined) {
        if (buckets.size >= maxKeys) buckets.delete(buckets.keys().next().value!)
        bucket = { tokens: limit, lastRefill: now }
      } else {
        buckets.delete(key)
        const refilled = Math.floor((now - bucket.lastRefill) / refillMillis)
        if (refilled > 0) {
          bucket.tokens = Math.min(limit, bucket.tokens + refilled)
          bucket.lastRefill += refilled * refillMillis
        }
      }
      // Re-inserted on every use, so the first key in the map is the one used least recently.
      buckets.set(key, bucket)
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1
        return 0
      }
      return Math.max(1, Math.ceil(bucket.lastRefill + refillMillis - now))
    }
  }
}

/** The ingest rate limiter with its buckets in this process's memory. */
export const layerMemory: Layer.Layer<IngestRate> = Layer.sync(IngestRate, () => makeMemory())
