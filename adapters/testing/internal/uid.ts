/** Unique ids per test, so tests sharing one store never see each other's rows. */
export const uid = (prefix = ""): string => prefix + globalThis.crypto.randomUUID()
