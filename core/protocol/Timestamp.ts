/**
 * Protocol timestamps (spec "Signed message headers"; docs/decisions.md "Timestamp freshness").
 *
 * Sent as RFC 3339 UTC with milliseconds (`2026-11-22T10:15:30.000Z`); accepted with `Z` or a
 * numeric offset. Parsing is strict: calendar fields are range-checked (no `02-30` rolling into
 * March), and anything `Date.parse` would guess at (`2026-11-22 10:15`, week dates, local time) is
 * refused.
 */

const daysInMonth = (year: number, month: number): number =>
  month === 2
    ? (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
      ? 29
      : 28
    : month === 4 || month === 6 || month === 9 || month === 11
      ? 30
      : 31

/**
 * Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`). Plain
 * arithmetic instead of `Date.UTC`, which reads years 0 to 99 as 1900 to 1999.
 */
const daysFromCivil = (year: number, month: number, day: number): number => {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yearOfEra = y - era * 400
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1
  return era * 146_097 + yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear - 719_468
}

/** The value of `count` ASCII digits at `at`, or -1 if any is not a digit. */
const digits = (s: string, at: number, count: number): number => {
  let n = 0
  for (let i = at; i < at + count; i++) {
    const d = s.charCodeAt(i) - 48
    if (d < 0 || d > 9) return -1
    n = n * 10 + d
  }
  return n
}

/**
 * Parses an RFC 3339 timestamp (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`) to epoch milliseconds,
 * or `undefined` when it is not one. Fractions finer than a millisecond are truncated. A hand-written
 * scanner rather than a regular expression: it runs on every signed message.
 */
export const parseTimestamp = (s: string): number | undefined => {
  const length = s.length
  if (length < 20 || length > 40) return undefined
  const year = digits(s, 0, 4)
  const month = digits(s, 5, 2)
  const day = digits(s, 8, 2)
  const hour = digits(s, 11, 2)
  const minute = digits(s, 14, 2)
  const second = digits(s, 17, 2)
  if (
    year < 0 ||
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > daysInMonth(year, month) ||
    hour < 0 ||
    hour > 23 ||
    minute < 0 ||
    minute > 59 ||
    second < 0 ||
    second > 59 ||
    s.charCodeAt(4) !== 45 ||
    s.charCodeAt(7) !== 45 ||
    (s.charCodeAt(10) | 32) !== 116 ||
    s.charCodeAt(13) !== 58 ||
    s.charCodeAt(16) !== 58
  )
    return undefined
  let at = 19
  let millis = 0
  if (s.charCodeAt(at) === 46) {
    at++
    const from = at
    while (at < length && at - from < 9) {
      const d = s.charCodeAt(at) - 48
      if (d < 0 || d > 9) break
      if (at - from < 3) millis = millis * 10 + d
      at++
    }
    const count = at - from
    if (count === 0) return undefined
    if (count === 1) millis *= 100
    else if (count === 2) millis *= 10
  }
  let offsetMinutes = 0
  const zone = s.charCodeAt(at)
  if ((zone | 32) === 122) {
    at++
  } else if (zone === 43 || zone === 45) {
    const offsetHours = digits(s, at + 1, 2)
    const offsetMins = digits(s, at + 4, 2)
    if (offsetHours < 0 || offsetHours > 23 || offsetMins < 0 || offsetMins > 59 || s.charCodeAt(at + 3) !== 58) {
      return undefined
    }
    offsetMinutes = (offsetHours * 60 + offsetMins) * (zone === 45 ? -1 : 1)
    at += 6
  } else {
    return undefined
  }
  if (at !== length) return undefined
  return (
    daysFromCivil(year, month, day) * 86_400_000 + ((hour * 60 + minute - offsetMinutes) * 60 + second) * 1000 + millis
  )
}

/**
 * Formats epoch milliseconds as the protocol's sending form: RFC 3339 UTC with milliseconds.
 */
export const formatTimestamp = (epochMillis: number): string => new Date(epochMillis).toISOString()
