// `npm start`'s first step: builds only when a source changed since dist/ was built, so that an
// unchanged checkout starts in well under a second instead of rebuilding for ~9 s.
import { isBuildCurrent } from './build-stamp.mjs'

if (!isBuildCurrent()) {
  process.stderr.write('plant-store: sources changed since the last build, building\n')
  await import('./build.mjs')
}
