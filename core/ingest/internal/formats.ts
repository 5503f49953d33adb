/**
 * The value formats the screen recognises (spec "Data that must never be sent"): secret formats
 * and provider prefixes, links, stack traces, e-mail addresses, phone numbers, IP addresses, card
 * numbers and IBANs. Internal to `Safety.ts`, their one public home.
 *
 * Each check runs only when the string has what its pattern needs (`://`, `@`, enough digits,
 * `::`), and every pattern is built once: this runs on every string of every ingested event.
 * @internal
 */

/**
 * Strings at least this long that look random are treated as secrets.
 */
export const highEntropyMinLength = 32

/**
 * The end of every secret reason.
 */
export const secretsReason = "; secrets, tokens and API keys must never be sent"
/**
 * The end of every personal-data reason.
 */
export const personalReason = "; personal data belongs only in the user object (name and email of user_id)"
const rawReason = "; send a bounded error code, never stack traces, raw logs or free text"

/**
 * Secret formats. Known provider prefixes match at any length after the prefix (a truncated or
 * test key is still a key); the generic shapes need enough characters to be told from words.
 */
const secretFormats: ReadonlyArray<readonly [RegExp, string]> = [
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----/, "looks like a private key"],
  [/\beyJ[A-Za-z0-9_-]{8,}/, "looks like a JSON Web Token"],
  [
    /\bbearer\s+(?:(?=[A-Za-z0-9\-._~+/]*\d)[A-Za-z0-9\-._~+/]+|[A-Za-z0-9\-._~+/]{12,})=*|\bbasic\s+[A-Za-z0-9\-._~+/]{8,}=*/i,
    "looks like an Authorization header value"
  ],
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

/**
 * The same pattern without the global flag: its `test` says whether `matchAll` would find anything,
 * without the iterator, the pattern copy and the match arrays `matchAll` allocates. Every
 * `matchAll` below runs only after it, since most strings hold no candidate at all.
 */
const anywhere = (pattern: RegExp): RegExp => new RegExp(pattern.source, pattern.flags.replace("g", ""))

const urlPattern = /\b[a-z][a-z0-9+.-]*:\/\/[^\s]+/gi
/** A URL without its scheme (`hooks.slack.com/services/…`, `www.example.com/invite/abc`). */
const bareUrlPattern = /(?<![\w.@/-])(?:[a-z0-9-]+\.)+[a-z]{2,}(?::\d+)?\/[^\s]*/gi
const someUrl = anywhere(urlPattern)
const someBareUrl = anywhere(bareUrlPattern)
const urlParts = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/i

/** Hosts whose links are webhooks or grant access whatever their path. */
const webhookHosts: ReadonlySet<string> = new Set([
  "hooks.slack.com",
  "hooks.zapier.com",
  "maker.ifttt.com",
  "webhook.site",
  "hook.integromat.com",
  "hook.make.com"
])
const inviteHosts: ReadonlySet<string> = new Set([
  "discord.gg",
  "chat.whatsapp.com",
  "join.slack.com",
  "t.me",
  "telegram.me"
])
const webhookPath = /webhook|\/hooks?(?:\/|$)|^\/bot\d+:/i
/** A host named for hooks (`hooks.example.com`, `webhooks.example.net`): its links are webhook endpoints. */
const webhookHostLabel = /^(?:web)?hooks?\./
/** Slack's incoming-webhook path (`/services/T…/B…/secret`), also served from proxies and mirrors. */
const servicesWebhookPath = /^\/services\/[A-Z0-9]{3,}\/[A-Z0-9]{3,}\/[A-Za-z0-9]{4,}/
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
  if (
    webhookHosts.has(host) ||
    host.endsWith(".webhook.office.com") ||
    webhookHostLabel.test(host) ||
    webhookPath.test(path) ||
    servicesWebhookPath.test(path)
  ) {
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
    if (!someUrl.test(s)) return undefined
    for (const match of s.matchAll(urlPattern)) {
      const problem = urlProblem(match[0])
      if (problem !== undefined) return problem
    }
  }
  // a string with a scheme is read as URLs with schemes only (one scan, not two)
  else {
    if (!someBareUrl.test(s)) return undefined
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
  /\bat\s+(?:[\w$.<>[\]/]+\s+)?\(?[^\s()]+\.(?:js|mjs|cjs|ts|tsx|jsx|java|kt|scala|cs|go|rb|php|py|swift|dart)(?::\d+){1,2}\)?|\bat\s+[\w$.<>]+\([\w$.]*(?:\.\w+:\d+|Native Method|Unknown Source)\)|\bFile\s+"[^"]+",\s+line\s+\d+|Traceback \(most recent call last\)|\bgoroutine\s+\d+\s+\[|^panic:\s|\.rb:\d+:in\s|Exception in thread\s|\b\w+(?:Error|Exception):\s.*\n/m

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
const someCardCandidate = anywhere(cardCandidates)

/**
 * Whether `s` holds a payment card number (Luhn-valid, see {@link cardCandidates}).
 */
export const hasCardNumber = (s: string): boolean => {
  if (!someCardCandidate.test(s)) return false
  for (const match of s.matchAll(cardCandidates)) {
    const digits = match[0].replace(/[ -]/g, "")
    if (digits.length >= 13 && digits.length <= 19 && luhnValid(digits)) return true
  }
  return false
}

/** Two letters, two check digits, 11 to 30 letters or digits, optionally in groups of four. */
const ibanCandidates = /(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}(?![A-Za-z0-9])/g
const someIbanCandidate = anywhere(ibanCandidates)

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
 */
export const hasIban = (s: string): boolean => {
  if (!someIbanCandidate.test(s)) return false
  for (const match of s.matchAll(ibanCandidates)) {
    const iban = match[0].replace(/ /g, "")
    if (iban.length >= 15 && iban.length <= 34 && ibanValid(iban)) return true
  }
  return false
}

const ipv6Candidates = /(?<![\w:.])[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(?:%\w+)?(?![\w:])/g
const someIpv6Candidate = anywhere(ipv6Candidates)
const hexGroup = /^[0-9A-Fa-f]{1,4}$/
const ipv4Only = /^(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}$/

const ipv6Valid = (candidate: string): boolean => {
  const address = candidate.replace(/%\w+$/, "")
  const halves = address.split("::")
  if (halves.length > 2) return false
  const groups = halves.flatMap((half) => (half === "" ? [] : half.split(":")))
  // an embedded IPv4 address counts as two groups
  const last = groups[groups.length - 1] ?? ""
  const embedded = last.includes(".")
  if (embedded && !ipv4Only.test(last)) return false
  const hex = embedded ? groups.slice(0, -1) : groups
  if (!hex.every((group) => hexGroup.test(group))) return false
  const count = hex.length + (embedded ? 2 : 0)
  return halves.length === 2 ? count <= 7 && (count >= 2 || address === "::1" || address === "::") : count === 8
}

/**
 * Whether `s` holds an IPv6 address: eight groups, or fewer around `::` (at least two groups, or
 * `::1`), so a time of day (`09:30:00`) or a `prefix::name` identifier is not one.
 */
export const hasIpv6 = (s: string): boolean => {
  if (!someIpv6Candidate.test(s)) return false
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

const somePhoneCandidate: ReadonlyArray<RegExp> = phonePatterns.map(anywhere)

const looksLikePhone = (s: string): boolean =>
  phonePatterns.some(
    (pattern, i) =>
      somePhoneCandidate[i]!.test(s) &&
      [...s.matchAll(pattern)].some((match) => {
        const digits = match[0].replace(/\D/g, "").length
        return digits >= 7 && digits <= 15
      })
  )

/** The secret formats as one expression per case mode: a miss (the usual case) costs two scans, not fourteen. */
const anySecretFormat = (ignoreCase: boolean): RegExp =>
  new RegExp(
    secretFormats
      .filter(([pattern]) => pattern.ignoreCase === ignoreCase)
      .map(([pattern]) => pattern.source)
      .join("|"),
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
    else if (
      !((c === 32 || c === 45) && run > 0 && i + 1 < s.length && s.charCodeAt(i + 1) >= 48 && s.charCodeAt(i + 1) <= 57)
    ) {
      if (run > best) best = run
      run = 0
    }
  }
  return Math.max(run, best)
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
export const formatProblem = (s: string): string | undefined => {
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
  if (digits >= 10 && s.length >= 15 && hasIban(withoutUuids))
    return "looks like a bank account number (IBAN)" + personalReason
  if (s.includes(".") && ipv4Pattern.test(withoutUuids)) return "looks like an IP address" + personalReason
  if (digits >= 7 && looksLikePhone(withoutUuids)) return "looks like a phone number" + personalReason
  return undefined
}
