import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs'

/** The largest setting file read (tokens, webhook endpoints): far more than any real one. */
export const MAX_SETTING_FILE_BYTES = 1024 * 1024

/**
 * The text of a setting file (tokens, webhook endpoints); `refuse` words the error of each problem.
 * Only a regular file of bounded size is read: a device such as /dev/zero never ends, and a named
 * pipe would hold start-up until someone writes to it (opened without blocking, it is refused
 * before any read).
 */
export function readSettingFile (path: string, refuse: (problem: string) => Error): string {
  let fd: number
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch (error) {
    throw refuse(`cannot be read (${(error as NodeJS.ErrnoException).code})`)
  }
  try {
    if (!fstatSync(fd).isFile()) throw refuse('is not a regular file')
    // One byte more than allowed tells a file too large (or growing) from one that fits.
    const buffer = Buffer.alloc(MAX_SETTING_FILE_BYTES + 1)
    let length = 0
    for (;;) {
      const read = readSync(fd, buffer, length, buffer.length - length, null)
      length += read
      if (read === 0 || length === buffer.length) break
    }
    if (length > MAX_SETTING_FILE_BYTES) throw refuse(`is larger than ${MAX_SETTING_FILE_BYTES} bytes`)
    return buffer.toString('utf8', 0, length)
  } finally {
    closeSync(fd)
  }
}
