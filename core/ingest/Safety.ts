/**
 * Screening of an event's `properties` (spec "Data that must never be sent", "Limits" 7).
 *
 * "Passwords, tokens, cookies, signatures, auth headers, API keys, session values, invite links,
 * webhook URLs, provider tokens, destination secrets; personal data outside the `user` object, full
 * URLs with query strings, full request or response bodies, stack traces, raw logs, prompts,
 * comments, notes, support messages, descriptions; free-text feedback, survey responses, chat
 * messages, support transcripts or AI summaries" are refused with code `unsafe_property`, and
 * "Properties are bounded" is enforced with code `property_bounds`. Every issue names the path and
 * the kind of data, never the value (DESIGN D8: the service stores no secrets and echoes no raw
 * values). A property name that itself looks like a secret or personal data is shown as
 * {@link redactedKey} in paths.
 *
 * The identifiers stored and shown outside `properties` (`account_id`, `user_id`, `event_id`) get
 * the value checks too ({@link screenIdentifiers}), except the randomness and length rules.
 *
 * Three screens of `properties`, all recursive:
 * 1. Names. A name is split into words (`accessToken`, `X-Api-Key`, `session_id`). One that marks a
 *    secret, personal data or free text is refused unless its value is a flag (`password_set: true`,
 *    `null`), or a further word says the value describes the thing rather than being it: a measure
 *    for numbers (`session_count`, `input_tokens`, `feedback_score`), a kind of metadata for any
 *    value (`token_type`, `email_domain`, `password_changed_at`, `error_message_code`).
 * 2. Values. Every string is checked for secret formats (provider keys, JWTs, auth headers, PEM
 *    keys, long high-entropy tokens), URLs with credentials, a query string or fragment
 *    parameters, webhook and invite links, e-mail addresses, phone numbers, IPv4 addresses, and
 *    free text.
 *    A string over the length bound is checked as well: it is free text whatever else it is.
 * 3. Bounds: {@link maxPropertyKeys} keys per object, {@link maxPropertyTotalKeys} in all, depth
 *    {@link maxPropertyDepth}, strings of {@link maxPropertyStringLength} characters, arrays of
 *    {@link maxPropertyArrayItems} items, names of {@link maxPropertyKeyLength} characters, and no
 *    `__proto__` name.
 *
 * Publishable provider keys (`pk_live_…`) are refused too: the spec lists "API keys" without
 * exception, and they carry no revenue signal.
 *
 * @since 0.1.0
 */
import { remembering } from "./Memo.ts"

/**
 * At most this many keys in any one object of `properties`.
 *
 * @since 0.1.0
 */
export const maxPropertyKeys = 50

/**
 * At most this many keys in `properties` altogether, nested objects included.
 *
 * @since 0.1.0
 */
export const maxPropertyTotalKeys = 200

/**
 * Containers nest at most this deep: `properties` is level 1, an object or array in it level 2.
 *
 * @since 0.1.0
 */
export const maxPropertyDepth = 3

/**
 * At most this many characters in a string value.
 *
 * @since 0.1.0
 */
export const maxPropertyStringLength = 256

/**
 * At most this many items in an array ("counts are current values, not lists").
 *
 * @since 0.1.0
 */
export const maxPropertyArrayItems = 20

/**
 * At most this many characters in a property name.
 *
 * @since 0.1.0
 */
export const maxPropertyKeyLength = 64

/**
 * A string with whitespace and more than this many words is free text.
 *
 * @since 0.1.0
 */
export const freeTextMaxWords = 8

/**
 * A string longer than this is free text (below the 256-character bound, which is a size error).
 *
 * @since 0.1.0
 */
export const freeTextMaxChars = 120

/**
 * Strings at least this long that look random (see {@link isHighEntropyToken}) are treated as
 * secrets.
 *
 * @since 0.1.0
 */
export const highEntropyMinLength = 32

/**
 * The path segment shown instead of a property name that is itself unsafe or too long.
 *
 * @since 0.1.0
 */
export const redactedKey = "<redacted>"

/**
 * @since 0.1.0
 */
export type SafetyCode = "unsafe_property" | "property_bounds"

/**
 * One refused location: where (`properties.…`) and what kind of data, never the value.
 *
 * @since 0.1.0
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
  ("count counts total totals used usage remaining limit limits quota consumed input output max min number num " +
    "length len size duration seconds secs ms millis minutes hours days age ttl rate ratio percent percentage pct " +
    "score rating avg average sum budget balance cost spent estimate").split(" ")
)

/** Words that make any value under a marked name describe it rather than be it. */
const metadataWords: ReadonlySet<string> = new Set(
  ("type types kind status state method methods strength enabled disabled provider source scope scopes version " +
    "format category level domain language lang mode policy at expires expiry expiration rotated changed created " +
    "updated started ended configured verified valid required present consent").split(" ")
)

/** Under a free-text name, a bounded code or identifier is what the spec asks for (`reason_code`). */
const freeTextMetadataWords: ReadonlySet<string> = new Set(
  "code codes id ids key keys template outcome result sentiment".split(" ")
)

const keyReasons: Readonly<Record<KeyKind, string>> = {
  secret: "the property name marks a secret (a password, token, key, cookie, session value, signature, credential, " +
    "invite link or webhook); secrets must never be sent",
  personal: "the property name marks personal data, which belongs only in the user object (name and email of user_id)",
  free_text: "the property name marks free text (comments, notes, messages, descriptions, feedback, prompts, " +
    "request or response bodies, logs or stack traces); send a bounded code, label or count instead"
}

/** Most names: nothing to split but underscores. */
const lowerSnakeKey = /^[a-z0-9_]*$/

/**
 * The words of a property name: camelCase and separators split, lowercased
 * (`X-Api-Key` -> `x api key`, `accessToken` -> `access token`).
 *
 * @since 0.1.0
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
    const word = words.findIndex((word) => single.has(word) || (fragments !== undefined && fragments.test(word)))
    if (word >= 0) return { kind, others: without(words, word, 1) }
  }
  return undefined
}

/** Why a marked name's value is refused, or `undefined` when the value is a flag or described by a further word. */
const keyProblem = (marked: MarkedKey | undefined, value: unknown): string | undefined => {
  if (marked === undefined || value === null || typeof value === "boolean") return undefined
  const described = marked.others.some((word) =>
    metadataWords.has(word) || (marked.kind === "free_text" && freeTextMetadataWords.has(word))
  )
  if (described) return undefined
  if (typeof value === "number" && (marked.kind === "free_text" || marked.others.some((word) => measureWords.has(word)))) {
    return undefined
  }
  return keyReasons[marked.kind]
}

// ---------------------------------------------------------------------------------------------
// values
// ---------------------------------------------------------------------------------------------

const secretsReason = "; secrets, tokens and API keys must never be sent"
const personalReason = "; personal data belongs only in the user object (name and email of user_id)"
const rawReason = "; send a bounded error code, never stack traces, raw logs or free text"

/**
 * Secret formats. Known provider prefixes match at any length after the prefix (a truncated or
 * test key is still a key); the generic shapes need enough characters to be told from words.
 */
const secretFormats: ReadonlyArray<readonly [RegExp, string]> = [
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----/, "looks like a private key"],
  [/\beyJ[A-Za-z0-9_-]{8,}/, "looks like a JSON Web Token"],
  [/\bbearer\s+(?:(?=[A-Za-z0-9\-._~+/]*\d)[A-Za-z0-9\-._~+/]+|[A-Za-z0-9\-._~+/]{12,})=*|\bbasic\s+[A-Za-z0-9\-._~+/]{8,}=*/i, "looks like an Authorization header value"],
  [
    /\b(?:proxy-)?authorization\s*[:=]|\b(?:set-)?cookie\s*:|\bx-api-key\s*[:=]|\b(?:digest\s+username|aws4-hmac-sha256\s+credential)=/i,
    "looks like an Authorization or Cookie header"
  ],
  [
    /\b(?:PHPSESSID|JSESSIONID|ASP\.NET_SessionId|connect\.sid|laravel_session|_session_id|csrftoken|sessionid|__(?:Secure|Host)-[\w.-]+)=|;\s*(?:path|domain|expires|max-age|samesite)=|;\s*(?:httponly|secure)\b/i,
    "looks like a cookie"
  ],
  [/\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]+/, "looks like a payment provider API key"],
  [/\bwhsec_[A-Za-z0-9+/=]+/, "looks like a webhook signing secret"],
  [/\b(?:pi|seti|src)_[A-Za-z0-9]+_secret_[A-Za-z0-9]+/, "looks like a payment client secret"],
  [/\bacc_(?:ingest|read|admin)_[A-Za-z0-9_-]{16,}/, "looks like an Accord API key"],
  [/\b(?:AKIA|ASIA)[0-9A-Z]{12,}\b/, "looks like an AWS access key"],
  [/\b(?:gh[pousr]_[A-Za-z0-9]{4,}|github_pat_[A-Za-z0-9_]+)/, "looks like a GitHub token"],
  [/\bxox[abposre]-[A-Za-z0-9-]+/, "looks like a Slack token"],
  [/\bAIza[0-9A-Za-z_-]{10,}/, "looks like a Google API key"],
  [/\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}/, "looks like an AI provider API key"],
  [
    /\b(?:glpat-[A-Za-z0-9_-]{8,}|npm_[A-Za-z0-9]{16,}|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{8,}|SG\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}|(?:sq0atp|sq0csp|EAAA)[A-Za-z0-9_-]{16,}|dop_v1_[a-f0-9]{16,}|hf_[A-Za-z0-9]{16,}|ya29\.[A-Za-z0-9_-]{8,})/,
    "looks like a provider access token"
  ],
  [
    /(?:^|[?&;\s])(?:password|passwd|pwd|pass|pin|token|access_token|secret|api_?key|sig|signature|session(?:_?id)?|sid)=/i,
    "looks like credentials in key=value form"
  ]
]

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const uuidsAnywhere = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi
/** Provider object ids (`cs_live_…`, `sub_…`) are identifiers; secret prefixes are matched before this. */
const providerObjectId = /^[a-z]{2,10}_(?:live_|test_)?[A-Za-z0-9]+$/

const shannonBits = (s: string): number => {
  const counts = new Map<string, number>()
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1)
  let bits = 0
  for (const n of counts.values()) bits -= (n / s.length) * Math.log2(n / s.length)
  return bits
}

/**
 * A token of {@link highEntropyMinLength}+ characters that looks random: hex, or base64/base64url
 * mixing cases or letters and digits with at least 4 bits of entropy per character. UUIDs, provider object
 * ids, lower_snake or kebab identifiers and camelCase words are not.
 *
 * @since 0.1.0
 */
export const isHighEntropyToken = (token: string): boolean => {
  if (token.length < highEntropyMinLength || uuidPattern.test(token)) return false
  if (/^[0-9a-fA-F]+$/.test(token)) return true
  if (!/^[A-Za-z0-9+/=_.-]+$/.test(token) || providerObjectId.test(token)) return false
  const upper = /[A-Z]/.test(token)
  const lower = /[a-z]/.test(token)
  const mixed = (upper && lower) || ((upper || lower) && /[0-9]/.test(token))
  if (!mixed || (!upper && /[_.-]/.test(token))) return false
  return shannonBits(token) >= 4 && !isWordLike(token)
}

/**
 * Whether a token reads as words (`EnterpriseAnnualPlan2024PromoCode`): split into camelCase words
 * and digit runs, its pieces average at least 4 characters. Random base64 splits into pieces of one
 * or two.
 */
const isWordLike = (token: string): boolean => {
  const pieces = token.match(/[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+/g) ?? []
  return pieces.length > 0 && pieces.reduce((sum, piece) => sum + piece.length, 0) / pieces.length >= 4
}

const urlPattern = /\b[a-z][a-z0-9+.-]*:\/\/[^\s]+/gi
/** A URL without its scheme (`hooks.slack.com/services/…`, `www.example.com/invite/abc`). */
const bareUrlPattern = /(?<![\w.@/-])(?:[a-z0-9-]+\.)+[a-z]{2,}(?::\d+)?\/[^\s]*/gi
const urlParts = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/i

/** Hosts whose links are webhooks or grant access whatever their path. */
const webhookHosts: ReadonlySet<string> = new Set([
  "hooks.slack.com", "hooks.zapier.com", "maker.ifttt.com", "webhook.site", "hook.integromat.com", "hook.make.com"
])
const inviteHosts: ReadonlySet<string> = new Set(["discord.gg", "chat.whatsapp.com", "join.slack.com", "t.me", "telegram.me"])
const webhookPath = /webhook|\/hooks?(?:\/|$)|^\/bot\d+:/i
const invitePath =
  /\/(?:invite|invites|invitation|invitations|join|joinchat|magic|magic[-_]link|reset[-_]password|password[-_]reset|j|meetup-join|accept[-_]invite|signup[-_]token|verify[-_]email)(?:\/|$)/i

const urlProblem = (url: string): string | undefined => {
  const parts = urlParts.exec(url)
  if (parts === null) return undefined
  const authority = parts[1] ?? ""
  const path = parts[2] ?? ""
  const query = parts[3] ?? ""
  const fragment = parts[4] ?? ""
  if (authority.includes("@")) return "is a URL with credentials" + secretsReason
  const host = authority.replace(/:\d*$/, "").toLowerCase()
  if (webhookHosts.has(host) || host.endsWith(".webhook.office.com") || webhookPath.test(path)) {
    return "is a webhook URL; webhook URLs are secrets and must never be sent"
  }
  if ((inviteHosts.has(host) && path.length > 1) || invitePath.test(path)) {
    return "is an invite or sign-in link; links that grant access must never be sent"
  }
  if (query.length > 1 || fragment.includes("=")) {
    return "is a URL with a query string; send the URL without its query, or a bounded code"
  }
  return undefined
}

/** The first problem of a URL in `s`, with or without a scheme. */
const urlsProblem = (s: string): string | undefined => {
  if (s.includes("://")) {
    for (const match of s.matchAll(urlPattern)) {
      const problem = urlProblem(match[0])
      if (problem !== undefined) return problem
    }
  }
  // a string with a scheme is read as URLs with schemes only (one scan, not two)
  else {
    for (const match of s.matchAll(bareUrlPattern)) {
      const problem = urlProblem("https://" + match[0])
      if (problem !== undefined) return problem
    }
  }
  return undefined
}

/**
 * Stack traces: a JavaScript, Java or C# frame (`at f (x.js:1:2)`), a Python frame
 * (`File "x.py", line 3`), a Ruby or Go frame, or the header of a trace or panic.
 */
const stackFrame =
  /\bat\s+(?:[\w$.<>[\]\/]+\s+)?\(?[^\s()]+\.(?:js|mjs|cjs|ts|tsx|jsx|java|kt|scala|cs|go|rb|php|py|swift|dart)(?::\d+){1,2}\)?|\bat\s+[\w$.<>]+\([\w$.]*(?:\.\w+:\d+|Native Method|Unknown Source)\)|\bFile\s+"[^"]+",\s+line\s+\d+|Traceback \(most recent call last\)|\bgoroutine\s+\d+\s+\[|^panic:\s|\.rb:\d+:in\s|Exception in thread\s|\b\w+(?:Error|Exception):\s.*\n/m

const lineBreak = /[\r\n]/
/** What every {@link stackFrame} alternative contains: the cheap test before the expensive one. */
const stackHint = /at\s|File\s|Traceback|goroutine|panic:|\.rb:|Exception|Error/

/** Luhn's checksum over the digits of `digits`. */
const luhnValid = (digits: string): boolean => {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return sum % 10 === 0
}

/**
 * 13 to 19 digits, in groups separated by single spaces or dashes, starting like a card scheme's
 * number (2-6: Mastercard, Amex, Visa, Discover, JCB, UnionPay, Diners): an epoch in milliseconds
 * (which starts with 1) or a phone number is not one.
 */
const cardCandidates = /(?<![\w.+-])(?:2[2-7]|3\d|4|5[1-5]|6)\d{2,3}(?:[ -]?\d){9,15}(?![\w.-])/g

/**
 * Whether `s` holds a payment card number (Luhn-valid, see {@link cardCandidates}).
 *
 * @since 0.1.0
 */
export const hasCardNumber = (s: string): boolean => {
  for (const match of s.matchAll(cardCandidates)) {
    const digits = match[0].replace(/[ -]/g, "")
    if (digits.length >= 13 && digits.length <= 19 && luhnValid(digits)) return true
  }
  return false
}

/** Two letters, two check digits, 11 to 30 letters or digits, optionally in groups of four. */
const ibanCandidates = /(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}(?![A-Za-z0-9])/g

/** ISO 13616 mod-97 over the rearranged IBAN, computed piecewise (no big integers). */
const ibanValid = (iban: string): boolean => {
  const rearranged = iban.slice(4) + iban.slice(0, 4)
  let remainder = 0
  for (let i = 0; i < rearranged.length; i++) {
    const c = rearranged.charCodeAt(i)
    const value = c <= 57 ? c - 48 : c - 55
    remainder = value > 9 ? (remainder * 100 + value) % 97 : (remainder * 10 + value) % 97
  }
  return remainder === 1
}

/**
 * Whether `s` holds an IBAN with a valid checksum (a random code of that shape passes 1 time in 97).
 *
 * @since 0.1.0
 */
export const hasIban = (s: string): boolean => {
  for (const match of s.matchAll(ibanCandidates)) {
    const iban = match[0].replace(/ /g, "")
    if (iban.length >= 15 && iban.length <= 34 && ibanValid(iban)) return true
  }
  return false
}

const ipv6Candidates = /(?<![\w:.])[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(?:%\w+)?(?![\w:])/g
const hexGroup = /^[0-9A-Fa-f]{1,4}$/
const ipv4Only = /^(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}$/

const ipv6Valid = (candidate: string): boolean => {
  const address = candidate.replace(/%\w+$/, "")
  const halves = address.split("::")
  if (halves.length > 2) return false
  const groups = halves.flatMap((half) => (half === "" ? [] : half.split(":")))
  // an embedded IPv4 address counts as two groups
  const last = groups[groups.length - 1]
  const embedded = last !== undefined && last.includes(".")
  if (embedded && !ipv4Only.test(last)) return false
  const hex = embedded ? groups.slice(0, -1) : groups
  if (!hex.every((group) => hexGroup.test(group))) return false
  const count = hex.length + (embedded ? 2 : 0)
  return halves.length === 2 ? count <= 7 && (count >= 2 || address === "::1" || address === "::") : count === 8
}

/**
 * Whether `s` holds an IPv6 address: eight groups, or fewer around `::` (at least two groups, or
 * `::1`), so a time of day (`09:30:00`) or a `prefix::name` identifier is not one.
 *
 * @since 0.1.0
 */
export const hasIpv6 = (s: string): boolean => {
  for (const match of s.matchAll(ipv6Candidates)) if (ipv6Valid(match[0])) return true
  return false
}

const emailPattern = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/
const ipv4Pattern = /(?<![\w.])(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}(?![\w.])/

const phonePatterns: ReadonlyArray<RegExp> = [
  // E.164: +15551234567
  /(?<![\w+])\+[1-9]\d{6,14}(?!\w)/g,
  // international with groups: +44 20 7946 0958, +1 (555) 123-4567
  /(?<![\w+])\+[1-9]\d{0,3}(?:[ .-]\(?\d{1,8}\)?){1,5}(?![\w])/g,
  // North American: (555) 123-4567, 555-123-4567, 555.123.4567
  /(?<!\w)(?:\(\d{3}\)\s?|\d{3}[ .-])\d{3}[ .-]\d{4}(?!\w)/g,
  // national formats with a trunk prefix: 020 7946 0958, 06 12 34 56 78
  /(?<![\w.])0\d{1,4}(?:[ .-]\d{2,4}){2,4}(?![\w.])/g
]

const looksLikePhone = (s: string): boolean =>
  phonePatterns.some((pattern) =>
    [...s.matchAll(pattern)].some((match) => {
      const digits = match[0].replace(/\D/g, "").length
      return digits >= 7 && digits <= 15
    })
  )

const freeTextReason = `looks like free text (more than ${freeTextMaxWords} words or ${freeTextMaxChars} characters); ` +
  "send bounded codes, labels or counts, never free text"

const hasMoreWordsThan = (s: string, words: number): boolean => {
  const trimmed = s.trim()
  return /\s/.test(trimmed) && trimmed.split(/\s+/).length > words
}

const isFreeText = (s: string): boolean => s.length > freeTextMaxChars || hasMoreWordsThan(s, freeTextMaxWords)

/** The secret formats as one expression per case mode: a miss (the usual case) costs two scans, not fourteen. */
const anySecretFormat = (ignoreCase: boolean): RegExp =>
  new RegExp(
    secretFormats.filter(([pattern]) => pattern.ignoreCase === ignoreCase).map(([pattern]) => pattern.source).join("|"),
    ignoreCase ? "i" : ""
  )
const anySecretFormatCased = anySecretFormat(false)
const anySecretFormatUncased = anySecretFormat(true)

/** How many times the character `code` occurs in `s`. */
const countOf = (s: string, code: number): number => {
  let n = 0
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) === code) n++
  return n
}

/**
 * The most digits in one run of digits separated by single spaces or dashes (a card number has 13
 * or more; a timestamp `2026-11-21T…` has 8), the cheap test before the card pattern.
 */
const longestDigitGroup = (s: string): number => {
  let best = 0
  let run = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 48 && c <= 57) run++
    else if (!((c === 32 || c === 45) && run > 0 && i + 1 < s.length && s.charCodeAt(i + 1) >= 48 && s.charCodeAt(i + 1) <= 57)) {
      if (run > best) best = run
      run = 0
    }
  }
  return run > best ? run : best
}

const countDigits = (s: string): number => {
  let digits = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 48 && c <= 57) digits++
  }
  return digits
}

/**
 * Why a string must not be sent because of a recognisable format (secrets, links, personal data),
 * or `undefined`. Each check runs only when the string has what its pattern needs (`://`, `@`,
 * enough digits), so an ordinary code costs a few scans.
 */
const formatProblem = (s: string): string | undefined => {
  if (anySecretFormatCased.test(s) || anySecretFormatUncased.test(s)) {
    for (const [pattern, reason] of secretFormats) if (pattern.test(s)) return reason + secretsReason
  }
  if (s.includes("/") && s.includes(".")) {
    const problem = urlsProblem(s)
    if (problem !== undefined) return problem
  }
  if (stackHint.test(s) && stackFrame.test(s)) return "looks like a stack trace" + rawReason
  if (lineBreak.test(s)) return "has line breaks, like a raw log, a stack trace or free text" + rawReason
  if (s.includes("@") && emailPattern.test(s)) return "looks like an e-mail address" + personalReason
  // an IPv6 address has `::` or seven colons; a timestamp has two
  if ((s.includes("::") || countOf(s, 58) >= 7) && hasIpv6(s)) return "looks like an IP address" + personalReason
  // an IPv4 address has 4 digits or more, an IBAN 4, a phone number 7, a card number 13
  const digits = countDigits(s)
  if (digits < 4) return undefined
  // digit groups inside a UUID are not a card, a phone number or an address
  const withoutUuids = s.length >= 36 ? s.replace(uuidsAnywhere, " ") : s
  if (digits >= 13 && longestDigitGroup(s) >= 13 && hasCardNumber(withoutUuids)) {
    return "looks like a payment card number" + personalReason
  }
  // the shortest IBAN (Norway, 15 characters) has 13 digits, a letter-heavy one (NL) 12
  if (digits >= 10 && s.length >= 15 && hasIban(withoutUuids)) return "looks like a bank account number (IBAN)" + personalReason
  if (s.includes(".") && ipv4Pattern.test(withoutUuids)) return "looks like an IP address" + personalReason
  if (digits >= 7 && looksLikePhone(withoutUuids)) return "looks like a phone number" + personalReason
  return undefined
}

/** Why a string must not be sent (secrets, links, personal data), or `undefined`. Not the free-text rule. */
const sensitiveProblem = (s: string): string | undefined =>
  formatProblem(s) ??
    (s.length >= highEntropyMinLength && s.split(/\s+/).some(isHighEntropyToken)
      ? "looks like a secret (a long random-looking string)" + secretsReason +
        ` (identifiers should be shorter than ${highEntropyMinLength} characters, or UUIDs)`
      : undefined)

/**
 * The part of a string the format checks read: all of it up to {@link maxPropertyStringLength}
 * characters, else its beginning. A longer string is refused as free text whatever it holds; the
 * window only chooses a more specific reason, and keeps the checks' cost bounded (some patterns are
 * quadratic in the worst case).
 */
const checkedPart = (s: string): string => (s.length > maxPropertyStringLength ? s.slice(0, maxPropertyStringLength) : s)

/**
 * Why a string value must not be sent, or `undefined` when it may. Never mentions the value.
 *
 * @since 0.1.0
 */
export const valueProblem = (s: string): string | undefined =>
  sensitiveProblem(checkedPart(s)) ?? (isFreeText(s) ? freeTextReason : undefined)

/**
 * Why an identifier (`account_id`, `user_id`, `event_id`) must not be sent, or `undefined`: the
 * format checks of {@link valueProblem} and free text by words. Not the length and randomness
 * rules: identifiers are opaque and often random by design (hashes, UUIDs without dashes), and the
 * event contract bounds their length.
 *
 * @since 0.1.0
 */
export const identifierProblem = (s: string): string | undefined =>
  formatProblem(checkedPart(s)) ?? (hasMoreWordsThan(s, freeTextMaxWords) ? freeTextReason : undefined)

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
const nameVerdict = remembering((name: string): NameVerdict => {
  const sensitive = sensitiveProblem(name)
  return { sensitive, marked: sensitive === undefined ? classifyKey(keyWords(name)) : undefined }
}, { keep: (_, verdict) => verdict.sensitive === undefined })

const isObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Screens `properties`: every unsafe or out-of-bounds location, with paths from the event root
 * (`properties.plan`, `properties.items.0.note`). Empty when the properties may be stored.
 *
 * @since 0.1.0
 */
export const screenProperties = (properties: Readonly<Record<string, unknown>>): ReadonlyArray<SafetyIssue> => {
  const walk: Walk = { issues: [], totalKeys: 0 }
  visitObject(walk, properties, "properties", 1)
  if (walk.totalKeys > maxPropertyTotalKeys) bounds(walk, "properties", `has more than ${maxPropertyTotalKeys} keys in all`)
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
    if (value.length > maxPropertyStringLength) bounds(walk, path, `is longer than ${maxPropertyStringLength} characters`)
    const problem = valueProblem(value)
    if (problem !== undefined) unsafe(walk, path, problem)
  } else if (typeof value === "number") {
    if (!Number.isFinite(value)) bounds(walk, path, "must be a finite number")
    // a card number sent as a JSON number (15 or 16 digits; counts and amounts are far smaller)
    else if (value >= 1e14 && value < 1e16 && Number.isInteger(value) && hasCardNumber(String(value))) {
      unsafe(walk, path, "looks like a payment card number" + personalReason)
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
      bounds(walk, `${path}.${redactedKey}`, "property names must not hold control, format or unpaired surrogate characters")
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
 *
 * @since 0.1.0
 */
export const screenedIdentifiers = ["account_id", "user_id", "event_id"] as const

/**
 * Screens the identifiers of a (possibly invalid) event body: every string among
 * {@link screenedIdentifiers} that must not be sent, with the field as its path.
 *
 * @since 0.1.0
 */
export const screenIdentifiers = (body: Readonly<Record<string, unknown>>): ReadonlyArray<SafetyIssue> => {
  const issues: Array<SafetyIssue> = []
  for (const field of screenedIdentifiers) {
    const value = body[field]
    const problem = typeof value === "string" ? identifierProblem(value) : undefined
    if (problem !== undefined) issues.push({ code: "unsafe_property", path: field, reason: problem })
  }
  return issues
}

/**
 * The envelope strings besides the identifiers that are stored and shown: the codes
 * (`event_name`, `semantic_type`, `event_kind`) and the user's `name` (the `email` is the one place
 * an e-mail address belongs, and the contract checks its shape).
 *
 * @since 0.1.0
 */
export const screenedEnvelopeFields = ["event_name", "semantic_type", "event_kind"] as const

/** Codes repeat on every event: their verdicts are remembered, never a refused one (it may be data). */
const codeProblem = remembering(identifierProblem, { keep: (_, problem) => problem === undefined })

/**
 * Screens every string of a (possibly invalid) event body outside `properties`: the identifiers
 * ({@link screenIdentifiers}), the codes of {@link screenedEnvelopeFields} and `user.name`, each
 * with {@link identifierProblem} (a provider secret key as `user.name` is refused).
 *
 * @since 0.1.0
 */
export const screenEnvelope = (body: Readonly<Record<string, unknown>>): ReadonlyArray<SafetyIssue> => {
  const issues = [...screenIdentifiers(body)]
  for (const field of screenedEnvelopeFields) {
    const value = body[field]
    const problem = typeof value === "string" ? codeProblem(value) : undefined
    if (problem !== undefined) issues.push({ code: "unsafe_property", path: field, reason: problem })
  }
  const user = body.user
  const name = isObject(user) ? user.name : undefined
  const problem = typeof name === "string" ? identifierProblem(name) : undefined
  if (problem !== undefined) issues.push({ code: "unsafe_property", path: "user.name", reason: problem })
  return issues
}

/** Control, format (bidi, zero-width) and lone surrogate characters: never shown in a path. */
const unprintable = /[\p{Cc}\p{Cf}\p{Cs}]/u

/**
 * A received name as it may be shown in a path: itself when it is 1 to {@link maxPropertyKeyLength}
 * printable characters and not data itself (an e-mail address, a secret), else {@link redactedKey}.
 * Every path segment taken from a body goes through here, so an answer never echoes a refused name.
 *
 * @since 0.1.0
 */
export const pathSegment = (key: string): string =>
  key.length === 0 || key.length > maxPropertyKeyLength || unprintable.test(key) || nameVerdict(key).sensitive !== undefined
    ? redactedKey
    : key
