import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

export type Networks = ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]>

/** An endpoint address refused: nothing is sent (outcome `blocked`). */
export class BlockedAddressError extends Error {
  override name = 'BlockedAddressError'
  readonly code = 'EWEBHOOKBLOCKED'
}

/** Public unicast only, unless inside an allowed network; an IPv4-mapped IPv6 counts as its IPv4. */
export function isAllowedAddress (address: string, allowed: Networks): boolean {
  const parsed = ipaddr.process(address)
  if (allowed.some(([network, bits]) => network.kind() === parsed.kind() && parsed.match(network, bits))) return true
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
