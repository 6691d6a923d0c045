import { readdirSync, readlinkSync, statSync, type Stats } from 'node:fs'
import { join } from 'node:path'

const FDS = '/proc/self/fd'
const DELETED = ' (deleted)'

/**
 * Where the file this process opened as `opened` is now: its path, or undefined when it has no
 * name any more (removed while open) or the system does not say (no /proc).
 */
export function pathNow (opened: Stats): string | undefined {
  let fds: string[]
  try {
    fds = readdirSync(FDS)
  /* c8 ignore next 3: only a system without procfs lands here */
  } catch {
    return undefined
  }
  for (const fd of fds) {
    try {
      const now = statSync(join(FDS, fd))
      if (now.ino !== opened.ino || now.dev !== opened.dev) continue
      const path = readlinkSync(join(FDS, fd))
      return path.endsWith(DELETED) ? undefined : path
    } catch {
      // Closed meanwhile (the directory's own descriptor among them).
    }
  }
  return undefined
}
