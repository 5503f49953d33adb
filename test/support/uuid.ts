/** Reading version 7 UUIDs in tests. */

/** A version 7 UUID in canonical lowercase text: version 7, variant 10. */
export const uuidV7Pattern = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** The Unix time in milliseconds a version 7 UUID's first 48 bits hold. */
export const uuidV7Millis = (uuid: string): number => parseInt(uuid.slice(0, 8) + uuid.slice(9, 13), 16)
