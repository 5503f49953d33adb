/**
 * Screening of an event's `properties` (spec "Data that must never be sent", "Limits" 7).
 *
 * "Passwords, tokens, cookies, signatures, auth headers, API keys, session values, invite links,
 * webhook URLs, provider tokens, destination secrets; personal data outside the `user` object, full
 * URLs with query strings, full request or response bodies, stack traces, raw logs, prompts,
 * comments, notes, support messages, descriptions; free-text feedback, survey responses, chat
 * messages, support transcripts or AI summaries" are refused with code `unsafe_property`, and
 * "Properties are bounded" is enforced with code `property_bounds`. Every issue names the path and
 * the kind of data, never the value (docs/decisions.md, "Problem details": the service stores no
 * secrets and echoes no raw values). A property name that itself looks like a secret or personal
 * data, or holds control or format characters, is shown as {@link redactedKey} in paths ({@link
 * pathSegment}).
 *
 * Every other string stored and shown outside `properties` gets the value checks too, except the
 * randomness and length rules ({@link screenEnvelope}): the identifiers (`account_id`, `user_id`,
 * `event_id`), the codes (`event_name`, `semantic_type`, `event_kind`) and `user.name`.
 *
 * Three screens of `properties`, all recursive:
 * 1. Names. A name is split into words (`accessToken`, `X-Api-Key`, `session_id`). One that marks a
 *    secret, personal data or free text is refused unless its value is a flag (`password_set: true`,
 *    `null`), or a further word says the value describes the thing rather than being it: a measure
 *    for numbers (`session_count`, `input_tokens`, `feedback_score`), a kind of metadata for any
 *    value (`token_type`, `email_domain`, `password_changed_at`, `error_message_code`).
 * 2. Values (`internal/formats.ts`). Every string is checked for secret formats (provider key
 *    prefixes at any length, JWTs, Authorization and Cookie header values, session cookies, PEM
 *    keys, long high-entropy tokens), URLs with credentials, a query string or fragment
 *    parameters, webhook and invite links with or without a scheme, stack traces and line breaks,
 *    e-mail addresses, phone numbers, IPv4 and IPv6 addresses, payment card numbers (Luhn), IBANs
 *    (mod 97), and free text. A 15- or 16-digit JSON number is checked as a card number.
 *    A string over the length bound is checked as well: it is free text whatever else it is.
 * 3. Bounds: {@link maxPropertyKeys} keys per object, {@link maxPropertyTotalKeys} in all, depth
 *    {@link maxPropertyDepth}, strings of {@link maxPropertyStringLength} characters, arrays of
 *    {@link maxPropertyArrayItems} items, names of {@link maxPropertyKeyLength} characters, and no
 *    `__proto__` name.
 *
 * Publishable provider keys (`pk_live_…`) are refused too: the spec lists "API keys" without
 * exception, and they carry no revenue signal.
 */
import * as formats from "./internal/formats.ts"
import { remembering } from "./Memo.ts"

/**
 * At most this many keys in any one object of `properties`.
 */
export const maxPropertyKeys = 50

/**
 * At most this many keys in `properties` altogether, nested objects included.
 */
export const maxPropertyTotalKeys = 200

/**
 * Containers nest at most this deep: `properties` is level 1, an object or array in it level 2.
 */
export const maxPropertyDepth = 3

/**
 * At most this many characters in a string value.
 */
export const maxPropertyStringLength = 256

/**
 * At most this many items in an array ("counts are current values, not lists").
 */
export const maxPropertyArrayItems = 20

/**
 * At most this many characters in a property name.
 */
export const maxPropertyKeyLength = 64

/**
 * A string with whitespace and more than this many words is free text.
 */
export const freeTextMaxWords = 8

/**
 * A string longer than this is free text (below the 256-character bound, which is a size error).
 */
export const freeTextMaxChars = 120

/**
 * Strings at least this long that look random (see {@link isHighEntropyToken}) are treated as
 * secrets.
 */
export const highEntropyMinLength: number = formats.highEntropyMinLength

/**
 * A token of {@link highEntropyMinLength}+ characters that looks random: hex, or base64/base64url
 * mixing cases or letters and digits with at least 4 bits of entropy per character. UUIDs, provider
 * object ids, lower_snake or kebab identifiers and camelCase words are not.
 */
export const isHighEntropyToken: (token: string) => boolean = formats.isHighEntropyToken

/**
 * Whether a string holds a payment card number: 13 to 19 digits (spaces or dashes allowed) with a
 * card scheme's first digits and a valid Luhn checksum.
 */
export const hasCardNumber: (s: string) => boolean = formats.hasCardNumber

/**
 * Whether a string holds an IBAN with a valid mod-97 checksum.
 */
export const hasIban: (s: string) => boolean = formats.hasIban

/**
 * Whether a string holds an IPv6 address (eight groups, or at least two around `::`, or `::1`).
 */
export const hasIpv6: (s: string) => boolean = formats.hasIpv6

/**
 * The path segment shown instead of a property name that is itself unsafe or too long.
 */
export const redactedKey = "<redacted>"

export type SafetyCode = "unsafe_property" | "property_bounds"

/**
 * One refused location: where (`properties.…`) and what kind of data, never the value.
 */
export interface SafetyIssue {
  readonly code: SafetyCode
  readonly path: string
  readonly reason: string
}

// ---------------------------------------------------------------------------------------------
// names
// ---------------------------------------------------------------------------------------------

type KeyKind = "secret" | "personal" | "free_text"

interface KeyTerms {
  readonly kind: KeyKind
  readonly words: ReadonlySet<string>
  /** Each phrase (words joined by `_`) with its rank: the first listed phrase found wins. */
  readonly phrases: ReadonlyMap<string, number>
  readonly longestPhrase: number
  /** Matched inside a word too (`userpassword`, `xapikey`). */
  readonly fragments: RegExp | undefined
}

const terms = (kind: KeyKind, words: string, phrases: string, fragments: string): KeyTerms => ({
  kind,
  words: new Set(words.split(" ")),
  phrases: new Map(phrases.split(" ").map((phrase, rank) => [phrase, rank])),
  longestPhrase: Math.max(...phrases.split(" ").map((phrase) => phrase.split("_").length)),
  // the fragments are plain lowercase words, so they need no escaping
  fragments: fragments === "" ? undefined : new RegExp(fragments.split(" ").join("|"))
})

const keyTerms: ReadonlyArray<KeyTerms> = [
  terms(
    "secret",
    "password passwords passwd pwd pw pword passwrd pass passphrase passcode pin pincode secret secrets token tokens " +
      "cookie cookies session sessions sessid sid " +
      "signature signatures sig authorization auth credential credentials creds apikey apikeys jwt bearer otp totp " +
      "privatekey webhook webhooks hmac csrf xsrf dsn",
    "api_key private_key client_secret auth_header auth_token session_id access_token refresh_token id_token " +
      "invite_link invite_url invite_code invite_token destination_secret set_cookie secret_key magic_link " +
      "reset_link login_link signed_url presigned_url connection_string database_url signing_key encryption_key " +
      "access_key security_code verification_code recovery_code backup_code",
    "password passwd passphrase passcode pincode apikey accesstoken refreshtoken privatekey clientsecret authtoken sessionid " +
      "secretkey setcookie webhook authorization credential"
  ),
  terms(
    "personal",
    "email emails phone phones telephone mobile msisdn address street postcode zipcode ip ipv4 ipv6 ssn dob " +
      "birthday birthdate surname username passport iban cvv cvc latitude longitude geolocation",
    "e_mail phone_number first_name last_name full_name given_name family_name user_name date_of_birth birth_date " +
      "social_security card_number credit_card zip_code postal_code ip_address national_id home_address street_address",
    "email phonenumber firstname lastname fullname ipaddress creditcard cardnumber"
  ),
  terms(
    "free_text",
    "comment comments note notes description descriptions message messages feedback transcript transcripts " +
      "summary summaries prompt prompts body bodies stack stacktrace traceback log logs headers header payload chat " +
      "review reviews text content question answer reply query search reason explanation memo bio survey subject " +
      "request response raw dump html markdown remark remarks annotation annotations conversation conversations " +
      "utterance utterances caption captions instructions sms",
    "survey_response stack_trace error_message request_body response_body raw_log query_string search_query " +
      "chat_message ai_summary support_message",
    "stacktrace errormessage"
  )
]

/** Words that make a number under a marked name a measure of it, not the thing itself. */
const measureWords: ReadonlySet<string> = new Set(
  (
    "count counts total totals used usage remaining limit limits quota consumed input output max min number num " +
    "length len size duration seconds secs ms millis minutes hours days age ttl rate ratio percent percentage pct " +
    "score rating avg average sum budget balance cost spent estimate"
  ).split(" ")
)

/** Words that make any value under a marked name describe it rather than be it. */
const metadataWords: ReadonlySet<string> = new Set(
  (
    "type types kind status state method methods strength enabled disabled provider source scope scopes version " +
    "format category level domain language lang mode policy at expires expiry expiration rotated changed created " +
    "updated started ended configured verified valid required present consent"
  ).split(" ")
)

/** Under a free-text name, a bounded code or identifier is what the spec asks for (`reason_code`). */
const freeTextMetadataWords: ReadonlySet<string> = new Set(
  "code codes id ids key keys template outcome result sentiment".split(" ")
)

const keyReasons: Readonly<Record<KeyKind, string>> = {
  secret:
    "the property name marks a secret (a password, token, key, cookie, session value, signature, credential, " +
    "invite link or webhook); secrets must never be sent",
  personal: "the property name marks personal data, which belongs only in the user object (name and email of user_id)",
  free_text:
    "the property name marks free text (comments, notes, messages, descriptions, feedback, prompts, " +
    "request or response bodies, logs or stack traces); send a bounded code, label or count instead"
}

/** Most names: nothing to split but underscores. */
const lowerSnakeKey = /^[a-z0-9_]*$/

/**
 * The words of a property name: camelCase and separators split, lowercased
 * (`X-Api-Key` -> `x api key`, `accessToken` -> `access token`).
 */
export const keyWords = (key: string): ReadonlyArray<string> =>
  lowerSnakeKey.test(key)
    ? key.split("_").filter((word) => word.length > 0)
    : key
        .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
        .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
        .toLowerCase()
        .split(/[^a-z0-9]+/)
        .filter((word) => word.length > 0)

interface MarkedKey {
  readonly kind: KeyKind
  /** The name's words outside the term that marked it. */
  readonly others: ReadonlyArray<string>
}

const without = (words: ReadonlyArray<string>, at: number, length: number): ReadonlyArray<string> =>
  words.filter((_, k) => k < at || k >= at + length)

/**
 * The first kind of term the name contains: within a kind, the first listed phrase found (at its
 * first position), else the first word that is a term or contains a fragment.
 */
const classifyKey = (words: ReadonlyArray<string>): MarkedKey | undefined => {
  for (const { fragments, kind, longestPhrase, phrases, words: single } of keyTerms) {
    let rank = -1
    let at = 0
    let length = 0
    for (let i = 0; i < words.length; i++) {
      let joined = words[i]!
      for (let n = 1; n <= longestPhrase && i + n <= words.length; n++) {
        if (n > 1) joined += "_" + words[i + n - 1]
        const found = phrases.get(joined)
        if (found !== undefined && (rank < 0 || found < rank)) {
          rank = found
          at = i
          length = n
        }
      }
    }
    if (rank >= 0) return { kind, others: without(words, at, length) }
    const word = words.findIndex((word) => single.has(word) || fragments?.test(word))
    if (word >= 0) return { kind, others: without(words, word, 1) }
  }
  return undefined
}

/** Why a marked name's value is refused, or `undefined` when the value is a flag or described by a further word. */
const keyProblem = (marked: MarkedKey | undefined, value: unknown): string | undefined => {
  if (marked === undefined || value === null || typeof value === "boolean") return undefined
  const described = marked.others.some(
    (word) => metadataWords.has(word) || (marked.kind === "free_text" && freeTextMetadataWords.has(word))
  )
  if (described) return undefined
  if (
    typeof value === "number" &&
    (marked.kind === "free_text" || marked.others.some((word) => measureWords.has(word)))
  ) {
    return undefined
  }
  return keyReasons[marked.kind]
}

// ---------------------------------------------------------------------------------------------
// values
// ---------------------------------------------------------------------------------------------

const freeTextReason =
  `looks like free text (more than ${freeTextMaxWords} words or ${freeTextMaxChars} characters); ` +
  "send bounded codes, labels or counts, never free text"

const hasMoreWordsThan = (s: string, words: number): boolean => {
  const trimmed = s.trim()
  return /\s/.test(trimmed) && trimmed.split(/\s+/).length > words
}

const isFreeText = (s: string): boolean => s.length > freeTextMaxChars || hasMoreWordsThan(s, freeTextMaxWords)

/** Why a string must not be sent (secrets, links, personal data), or `undefined`. Not the free-text rule. */
const sensitiveProblem = (s: string): string | undefined =>
  formats.formatProblem(s) ??
  (s.length >= highEntropyMinLength && s.split(/\s+/).some(formats.isHighEntropyToken)
    ? "looks like a secret (a long random-looking string)" +
      formats.secretsReason +
      ` (identifiers should be shorter than ${highEntropyMinLength} characters, or UUIDs)`
    : undefined)

/**
 * The part of a string the format checks read: all of it up to {@link maxPropertyStringLength}
 * characters, else its beginning. A longer string is refused as free text whatever it holds; the
 * window only chooses a more specific reason, and keeps the checks' cost bounded (some patterns are
 * quadratic in the worst case).
 */
const checkedPart = (s: string): string =>
  s.length > maxPropertyStringLength ? s.slice(0, maxPropertyStringLength) : s

/**
 * Why a string value must not be sent, or `undefined` when it may. Never mentions the value.
 */
export const valueProblem = (s: string): string | undefined =>
  sensitiveProblem(checkedPart(s)) ?? (isFreeText(s) ? freeTextReason : undefined)

/**
 * Why an identifier (`account_id`, `user_id`, `event_id`) must not be sent, or `undefined`: the
 * format checks of {@link valueProblem} and free text by words. Not the length and randomness
 * rules: identifiers are opaque and often random by design (hashes, UUIDs without dashes), and the
 * event contract bounds their length.
 */
export const identifierProblem = (s: string): string | undefined =>
  formats.formatProblem(checkedPart(s)) ?? (hasMoreWordsThan(s, freeTextMaxWords) ? freeTextReason : undefined)

// ---------------------------------------------------------------------------------------------
// the walk
// ---------------------------------------------------------------------------------------------

/** What a property name says on its own: data in the name itself, or a term marking its value. */
interface NameVerdict {
  readonly sensitive: string | undefined
  readonly marked: MarkedKey | undefined
}

/**
 * What a property name says on its own, remembered per name (senders use the same few names on
 * every event), except for a name that is itself data (an e-mail address), which is never kept.
 */
const nameVerdict = remembering(
  (name: string): NameVerdict => {
    const sensitive = sensitiveProblem(name)
    return { sensitive, marked: sensitive === undefined ? classifyKey(keyWords(name)) : undefined }
  },
  { keep: (_, verdict) => verdict.sensitive === undefined }
)

const isObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Screens `properties`: every unsafe or out-of-bounds location, with paths from the event root
 * (`properties.plan`, `properties.items.0.note`). Empty when the properties may be stored.
 */
export const screenProperties = (properties: Readonly<Record<string, unknown>>): ReadonlyArray<SafetyIssue> => {
  const walk: Walk = { issues: [], totalKeys: 0 }
  visitObject(walk, properties, "properties", 1)
  if (walk.totalKeys > maxPropertyTotalKeys)
    bounds(walk, "properties", `has more than ${maxPropertyTotalKeys} keys in all`)
  return walk.issues
}

/** The state of one screening walk (top-level functions, not closures: it runs on every request). */
interface Walk {
  readonly issues: Array<SafetyIssue>
  totalKeys: number
}

const bounds = (walk: Walk, path: string, reason: string): void => {
  walk.issues.push({ code: "property_bounds", path, reason })
}

const unsafe = (walk: Walk, path: string, reason: string): void => {
  walk.issues.push({ code: "unsafe_property", path, reason })
}

const visitValue = (walk: Walk, value: unknown, path: string, depth: number): void => {
  if (typeof value === "string") {
    // both rules: an over-long string is a size error and, whatever else, free text (a stack trace)
    if (value.length > maxPropertyStringLength)
      bounds(walk, path, `is longer than ${maxPropertyStringLength} characters`)
    const problem = valueProblem(value)
    if (problem !== undefined) unsafe(walk, path, problem)
  } else if (typeof value === "number") {
    if (!Number.isFinite(value)) bounds(walk, path, "must be a finite number")
    // a card number sent as a JSON number (15 or 16 digits; counts and amounts are far smaller)
    else if (value >= 1e14 && value < 1e16 && Number.isInteger(value) && hasCardNumber(String(value))) {
      unsafe(walk, path, "looks like a payment card number" + formats.personalReason)
    }
  } else if (value === null || typeof value === "boolean") {
    return
  } else if (Array.isArray(value)) {
    if (depth + 1 > maxPropertyDepth) return bounds(walk, path, `is nested deeper than ${maxPropertyDepth} levels`)
    if (value.length > maxPropertyArrayItems) {
      bounds(walk, path, `has more than ${maxPropertyArrayItems} items; send current counts, not lists`)
    }
    for (let index = 0; index < value.length; index++) visitValue(walk, value[index], `${path}.${index}`, depth + 1)
  } else if (isObject(value)) {
    if (depth + 1 > maxPropertyDepth) return bounds(walk, path, `is nested deeper than ${maxPropertyDepth} levels`)
    visitObject(walk, value, path, depth + 1)
  } else {
    bounds(walk, path, "must be a JSON value: a string, number, boolean, null, array or object")
  }
}

const visitObject = (walk: Walk, object: Readonly<Record<string, unknown>>, path: string, depth: number): void => {
  const keys = Object.keys(object)
  walk.totalKeys += keys.length
  if (keys.length > maxPropertyKeys) bounds(walk, path, `has more than ${maxPropertyKeys} keys`)
  for (const key of keys) {
    if (key.length === 0 || key.length > maxPropertyKeyLength) {
      bounds(walk, `${path}.${redactedKey}`, `property names must be 1 to ${maxPropertyKeyLength} characters`)
      continue
    }
    if (unprintable.test(key)) {
      bounds(
        walk,
        `${path}.${redactedKey}`,
        "property names must not hold control, format or unpaired surrogate characters"
      )
      continue
    }
    if (key === "__proto__") {
      // an own key from JSON.parse; copied into another object it would set that object's prototype
      bounds(walk, `${path}.${key}`, "__proto__ is not allowed as a property name")
      continue
    }
    const { marked, sensitive } = nameVerdict(key)
    if (sensitive !== undefined) {
      unsafe(walk, `${path}.${redactedKey}`, `a property name ${sensitive.replace(/^(looks|is)/, "that $1")}`)
      continue
    }
    const value = object[key]
    const refused = keyProblem(marked, value)
    if (refused !== undefined) unsafe(walk, `${path}.${key}`, refused)
    else visitValue(walk, value, `${path}.${key}`, depth)
  }
}

/**
 * The identifiers outside `properties` that are stored and shown: screened with
 * {@link identifierProblem} (an e-mail address as `user_id`, a secret as `event_id`).
 */
export const screenedIdentifiers = ["account_id", "user_id", "event_id"] as const

/** Pushes an issue for every string among `fields` of `body` that `problem` refuses. */
const screenStrings = (
  issues: Array<SafetyIssue>,
  body: Readonly<Record<string, unknown>>,
  fields: ReadonlyArray<string>,
  problem: (s: string) => string | undefined
): void => {
  for (const field of fields) {
    const value = body[field]
    const found = typeof value === "string" ? problem(value) : undefined
    if (found !== undefined) issues.push({ code: "unsafe_property", path: field, reason: found })
  }
}

/**
 * The envelope strings besides the identifiers that are stored and shown: the codes
 * (`event_name`, `semantic_type`, `event_kind`) and the user's `name` (the `email` is the one place
 * an e-mail address belongs, and the contract checks its shape).
 */
export const screenedEnvelopeFields = ["event_name", "semantic_type", "event_kind"] as const

const userNameField = ["name"] as const

/** Codes repeat on every event: their verdicts are remembered, never a refused one (it may be data). */
const codeProblem = remembering(identifierProblem, { keep: (_, problem) => problem === undefined })

/**
 * Screens every string of a (possibly invalid) event body outside `properties`: the identifiers
 * ({@link screenedIdentifiers}), the codes of {@link screenedEnvelopeFields} and `user.name`, each
 * with {@link identifierProblem} (a provider secret key as `user.name` is refused).
 */
export const screenEnvelope = (body: Readonly<Record<string, unknown>>): ReadonlyArray<SafetyIssue> => {
  const issues: Array<SafetyIssue> = []
  screenStrings(issues, body, screenedIdentifiers, identifierProblem)
  screenStrings(issues, body, screenedEnvelopeFields, codeProblem)
  const user = body.user
  if (isObject(user)) {
    const before = issues.length
    screenStrings(issues, user, userNameField, identifierProblem)
    if (issues.length > before) issues[before] = { ...issues[before]!, path: "user.name" }
  }
  return issues
}

/** Control, format (bidi, zero-width) and lone surrogate characters: never shown in a path. */
const unprintable = /[\p{Cc}\p{Cf}\p{Cs}]/u

/**
 * A received name as it may be shown in a path: itself when it is 1 to {@link maxPropertyKeyLength}
 * printable characters and not data itself (an e-mail address, a secret), else {@link redactedKey}.
 * Every path segment taken from a body goes through here, so an answer never echoes a refused name.
 */
export const pathSegment = (key: string): string =>
  key.length === 0 ||
  key.length > maxPropertyKeyLength ||
  unprintable.test(key) ||
  nameVerdict(key).sensitive !== undefined
    ? redactedKey
    : key
