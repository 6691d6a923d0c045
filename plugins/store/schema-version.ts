/**
 * Why a store refuses data a newer release wrote: that release may have changed what the tables
 * mean, and writing to them silently would be a downgrade nobody chose.
 */
export const newerSchema = (version: number, known: number) =>
  `schema version ${version} was written by a newer plant-store (this one knows up to ${known}): run that release, or restore a backup taken before the upgrade`
