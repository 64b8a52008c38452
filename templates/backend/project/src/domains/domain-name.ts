import net from 'node:net';
import { domainToASCII } from 'node:url';

/**
 * What a domain claim may name, and the DNS record that proves it (docs/domains.md). Pure: no
 * lookup, no database.
 */

/** The name the TXT record is published under, below the domain claimed. */
export const verificationRecordPrefix = '_authstrap-verification';
/** What the record's value starts with, before the claim's token. */
export const verificationValuePrefix = 'authstrap-domain-verification=';

/** The record an owner publishes, as the API shows it to copy. */
export interface TxtRecord {
  type: 'TXT';
  name: string;
  value: string;
}

export const txtRecordOf = (domain: string, txtToken: string): TxtRecord => ({
  type: 'TXT',
  name: `${verificationRecordPrefix}.${domain}`,
  value: `${verificationValuePrefix}${txtToken}`,
});

/** A label as DNS allows it in a host name (LDH), 1 to 63 characters; the last one not all digits. */
const label = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const topLabel = /^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Names no organization can own: the machine's own and the reverse-lookup tree. */
const reservedSuffixes = ['localhost', 'arpa'];

/**
 * A domain as it is stored and compared: lowercase ASCII (an internationalised name in its
 * `xn--` form, by `node:url` `domainToASCII`), without a trailing dot, at least two labels, no IP
 * literal. The same pattern as the table's CHECK, so that what passes here is never refused there.
 * Answers the reason when `raw` is no domain: the 422's `details.domain`.
 */
export function normaliseDomain(raw: string): { domain: string } | { problem: string } {
  const trimmed = raw.trim();
  if (trimmed === '') return { problem: 'must be a domain like example.com' };
  // Anything but a bare name: a URL, an address, a port, a path, a wildcard, spaces or controls inside.
  if (/[\s\u0000-\u001f\u007f]/u.test(trimmed)) return { problem: 'must be a domain alone, without spaces or control characters' };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) || /[/?#@:\\[\]*%]/.test(trimmed)) {
    return { problem: 'must be a domain alone (like example.com): no scheme, address, port, path or wildcard' };
  }
  const withoutRoot = trimmed.endsWith('.') ? trimmed.slice(0, -1) : trimmed;
  if (net.isIP(withoutRoot) !== 0) return { problem: 'must be a domain, not an IP address' };
  const ascii = domainToASCII(withoutRoot);
  if (ascii === '') return { problem: 'is not a valid domain name (IDNA)' };
  // The URL standard reads 127.1 or 0x7f.1 as IPv4 addresses: refused too.
  if (net.isIP(ascii) !== 0) return { problem: 'must be a domain, not an IP address' };
  if (ascii.length > 253) return { problem: 'is longer than 253 characters' };
  const labels = ascii.split('.');
  if (labels.length < 2) return { problem: 'must have at least two labels (like example.com), not a single name' };
  if (!labels.every((part) => label.test(part)) || !topLabel.test(labels[labels.length - 1]!)) {
    return { problem: 'must be a host name: letters, digits and hyphens in labels of 1 to 63 characters, a top-level label that is not all digits' };
  }
  const top = labels[labels.length - 1]!;
  if (reservedSuffixes.includes(top)) return { problem: `cannot be claimed: .${top} names belong to no organization` };
  return { domain: ascii };
}
