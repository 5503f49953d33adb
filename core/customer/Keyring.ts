/**
 * The connection revisions the customer kit holds secrets for (spec "Connection revision
 * lifecycle": a reconfiguration creates a new pending revision that a successful handshake
 * activates). Holding the next revision's pair next to the active one lets a customer rotate
 * secrets without downtime: deploy both, let the service's check activate the new revision, and
 * drop the old pair once every action bound to it has ended.
 *
 * - A handshake names its revision in a header; that revision's pair verifies and signs it.
 * - An execution or reconciliation request carries no revision: each pair's action signing secret
 *   is tried, newest revision first, and the pair that verified signs the answer. A claimed
 *   execution is recorded under that revision.
 * - A completion is signed with the completion secret of the revision its action was claimed under.
 */
import type { SigningKeys } from "../protocol/Signing.ts"

/**
 * One connection revision and its imported key pair.
 */
export interface RevisionKeys {
  readonly revision: number
  readonly keys: SigningKeys
}

/**
 * The keys an endpoint or worker is configured with: one pair at one revision (default 0, "the
 * initial revision is zero"), or several revisions, each with its own pair.
 */
export type KeyOptions =
  | { readonly keys: SigningKeys; readonly revision?: number; readonly revisions?: never }
  | { readonly revisions: ReadonlyArray<RevisionKeys>; readonly keys?: never; readonly revision?: never }

/**
 * The configured revisions, newest first: when two revisions share an action signing secret, the
 * newer one is the one a request is bound to.
 */
export const keyringOf = (options: KeyOptions): ReadonlyArray<RevisionKeys> =>
  options.revisions !== undefined
    ? [...options.revisions].sort((a, b) => b.revision - a.revision)
    : [{ revision: options.revision ?? 0, keys: options.keys }]

/**
 * The pair of `revision`; a revision no longer configured (or none recorded) falls back to the
 * newest pair (the service verifies completions with the action's own revision and with its active
 * one too).
 */
export const keysForRevision = (
  keyring: ReadonlyArray<RevisionKeys>,
  revision: number | undefined
): RevisionKeys | undefined => keyring.find((entry) => entry.revision === revision) ?? keyring[0]

/**
 * The pair to sign a completion delivery with: the pair of the revision the action was claimed
 * under, and after the service refused the previous attempt's signature (HTTP 401) the other
 * configured pairs in turn. When revisions share their action signing secret, the pair that
 * verified the execution request does not tell which revision the service holds active, and the
 * service accepts completions signed only with its active revision's completion secret or an
 * older one not yet retired.
 */
export const completionKeysFor = (
  keyring: ReadonlyArray<RevisionKeys>,
  revision: number | undefined,
  previous: { readonly attempts: number; readonly lastError: string | null }
): RevisionKeys | undefined => {
  const recorded = keysForRevision(keyring, revision)
  if (recorded === undefined || previous.lastError !== "status_401" || keyring.length < 2) return recorded
  const order = [recorded, ...keyring.filter((entry) => entry !== recorded)]
  return order[previous.attempts % order.length]
}
