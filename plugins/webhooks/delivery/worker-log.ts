/** Where the delivery worker and its parts (results.ts, upkeep.ts) say what went wrong. */
export interface WorkerLog {
  warn (object: object, message: string): void
}
