import { readFileSync } from 'node:fs'
import t from 'tap'
import { parse } from 'yaml'
import { ConfigSchema } from '../../../service/config/index.js'

interface Manifest {
  spec: {
    template: {
      spec: {
        terminationGracePeriodSeconds: number
        containers: Array<{
          env: Array<{ name: string, value?: string }>
          livenessProbe: { httpGet: { path: string } }
          readinessProbe: { httpGet: { path: string } }
        }>
      }
    }
  }
}

const manifest = parse(readFileSync(new URL('../../../deploy/kubernetes.yaml', import.meta.url), 'utf8')) as Manifest
const DEFAULT_SHUTDOWN_TIMEOUT = (ConfigSchema.properties.SHUTDOWN_TIMEOUT as unknown as { default: number }).default
const pod = manifest.spec.template.spec
const [container] = pod.containers

t.test('the SIGTERM grace period outlasts SHUTDOWN_TIMEOUT (set, or the config default)', async (t) => {
  const set = container!.env.find(({ name }) => name === 'SHUTDOWN_TIMEOUT')?.value
  const shutdownTimeout = set === undefined ? DEFAULT_SHUTDOWN_TIMEOUT : Number(set)
  t.equal(shutdownTimeout, DEFAULT_SHUTDOWN_TIMEOUT, 'the manifest keeps the default')
  t.ok(pod.terminationGracePeriodSeconds * 1000 > shutdownTimeout, `${pod.terminationGracePeriodSeconds} s > ${shutdownTimeout} ms`)
})

t.test('the probes ask the routes the service answers', async (t) => {
  t.equal(container!.livenessProbe.httpGet.path, '/healthz')
  t.equal(container!.readinessProbe.httpGet.path, '/readyz')
})
