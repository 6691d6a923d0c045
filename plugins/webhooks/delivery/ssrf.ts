import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

export type Networks = ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]>

/** An endpoint address refused: nothing is sent (outcome `blocked`). */
export class BlockedAddressError extends Error {
  override name = 'BlockedAddressError'
  readonly code = 'EWEBHOOKBLOCKED'
}

const ipv4Of = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff])

// The IPv6 prefixes that carry an IPv4 address, and where it sits. A packet to one of them reaches
// (or is translated to) that IPv4 address, so it is that address which is judged.
type Extract = (parts: number[]) => ipaddr.IPv4
const last32: Extract = (parts) => ipv4Of(parts[6], parts[7])
const EMBEDDINGS = ([
  ['::ffff:0:0/96', last32], // mapped
  ['::ffff:0:0:0/96', last32], // translated (SIIT)
  ['::/96', last32], // compatible (deprecated, still routed by some stacks)
  ['64:ff9b::/96', last32], // NAT64, well-known prefix
  ['2002::/16', (parts) => ipv4Of(parts[1], parts[2])], // 6to4
  ['2001::/32', (parts) => ipv4Of(parts[6] ^ 0xffff, parts[7] ^ 0xffff)] // Teredo: the client's address, inverted
] satisfies Array<[string, Extract]>).map(([cidr, extract]) => ({ network: ipaddr.IPv6.parseCIDR(cidr), extract }))

/** The IPv4 address an IPv6 address carries, in any of the forms above. */
function embeddedIPv4 (address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  return EMBEDDINGS.find(({ network }) => address.match(network))?.extract(address.parts)
}

const inside = (address: ipaddr.IPv4 | ipaddr.IPv6, networks: Networks) =>
  networks.some(([network, bits]) => network.kind() === address.kind() && address.match(network, bits))

/**
 * Public unicast only, unless inside an allowed network. An IPv6 address that carries an IPv4
 * address (mapped, compatible, NAT64, 6to4, Teredo) is judged as that IPv4 address, unless the
 * IPv6 address itself is allowed.
 */
export function isAllowedAddress (address: string, allowed: Networks): boolean {
  const parsed = ipaddr.parse(address)
  if (inside(parsed, allowed)) return true
  const ipv4 = parsed.kind() === 'ipv6' ? embeddedIPv4(parsed as ipaddr.IPv6) : undefined
  if (ipv4 !== undefined) return inside(ipv4, allowed) || ipv4.range() === 'unicast'
  return parsed.range() === 'unicast'
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

/**
 * A `lookup` for node:http that drops refused addresses from the answer, so the socket connects
 * only to an address checked here: no second resolution can rebind it.
 */
export function guardedLookup (allowed: Networks) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error !== null) return callback(error, [])
      const permitted = addresses.filter(({ address }) => isAllowedAddress(address, allowed))
      if (permitted.length === 0) return callback(new BlockedAddressError(`${hostname} resolves only to refused addresses`), [])
      if (options.all === true) return callback(null, permitted)
      callback(null, permitted[0].address, permitted[0].family)
    })
  }
}

/** Node connects to an IP literal without any lookup: such a URL host is checked here first. */
export function checkLiteralHost (url: URL, allowed: Networks): void {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (isIP(host) !== 0 && !isAllowedAddress(host, allowed)) throw new BlockedAddressError(`${host} is not a public address`)
}
