import { Resolver } from 'node:dns/promises';
import type { DomainSettings } from '../config.js';

/**
 * The one effect of a domain check: asking DNS for the TXT records at a name, through the resolvers
 * DNS_SERVERS names (the system's own when it is empty). What came back is sorted into three:
 * records, certainly none (NXDOMAIN or no TXT data: a finding), or no answer at all (a timeout, a
 * server failure, a refusal: not a finding, so the domain keeps its state and is asked again later).
 */

export type TxtAnswer =
  | { kind: 'records'; values: string[] }
  | { kind: 'none'; reason: string }
  | { kind: 'unanswered'; reason: string };

export type TxtLookup = (name: string) => Promise<TxtAnswer>;

/** c-ares' answers that say the name has no TXT record; every other error says nothing about it. */
const noRecord = new Set(['ENOTFOUND', 'ENODATA']);

export function txtLookup(settings: Pick<DomainSettings, 'dnsServers' | 'dnsTimeoutMs'>): TxtLookup {
  // Two tries: one lost UDP packet is no reason to wait an hour for the next check.
  const resolver = new Resolver({ timeout: settings.dnsTimeoutMs, tries: 2 });
  if (settings.dnsServers.length > 0) resolver.setServers(settings.dnsServers);
  return async (name) => {
    try {
      // A record longer than 255 bytes comes in several strings: one value, joined.
      const records = await resolver.resolveTxt(name);
      return { kind: 'records', values: records.map((chunks) => chunks.join('')) };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unknown';
      if (noRecord.has(code)) return { kind: 'none', reason: 'record not found' };
      return { kind: 'unanswered', reason: unansweredReason(code) };
    }
  };
}

function unansweredReason(code: string): string {
  switch (code) {
    case 'ETIMEOUT':
      return 'DNS timeout';
    case 'ESERVFAIL':
      return 'DNS server failure (SERVFAIL)';
    case 'EREFUSED':
      return 'DNS server refused the query';
    case 'ECONNREFUSED':
      return 'DNS server not reachable';
    default:
      return `DNS error (${code})`;
  }
}
