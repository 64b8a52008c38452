import dns from 'node:dns/promises';
import net from 'node:net';

/**
 * Where a webhook may go. An organization's admin chooses the URL, and the backend sends to it
 * from inside its own network: without these checks a URL could reach the database, the cloud's
 * metadata service (169.254.169.254, which hands out credentials) or anything else on the
 * private network (server-side request forgery). So:
 *
 * - only https:// URLs;
 * - the name is resolved on every attempt, and the delivery is refused when any address it
 *   resolves to is loopback, private, link-local, shared (CGNAT), unspecified, multicast or
 *   reserved; the connection then goes to the address that was checked, never to a second
 *   lookup's answer (a name that changes its answer between the two, DNS rebinding, gains nothing);
 * - redirects are not followed (the delivery fails), so an allowed URL cannot send the backend on
 *   to a refused one.
 *
 * WEBHOOKS_ALLOW_PRIVATE=true (development and tests only; refused in production) allows http://
 * and every address, for a receiver on this machine.
 */

/** The address ranges no webhook may reach. */
const refused = new net.BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches this host
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, with the metadata services of the clouds
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
] as const) {
  refused.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b::', 96], // NAT64: an IPv4 address inside
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local (private)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  refused.addSubnet(network, prefix, 'ipv6');
}

/** A URL or address a webhook may not use, with why. */
export class RefusedWebhookAddress extends Error {
  override name = 'RefusedWebhookAddress';
}

/** Whether an IP address is one no webhook may reach (an IPv4 address inside IPv6, `::ffff:10.0.0.1`, as the IPv4 one). */
export function isRefusedAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return refused.check(mapped[1]!, 'ipv4');
  const family = net.isIP(address);
  if (family === 0) return true;
  return refused.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The URL as a webhook endpoint may have it; throws RefusedWebhookAddress saying why not. */
export function parseWebhookUrl(raw: string, allowPrivate: boolean): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RefusedWebhookAddress('not a URL');
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) throw new RefusedWebhookAddress('webhook URLs must be https://');
  if (url.username || url.password) throw new RefusedWebhookAddress('a webhook URL may not carry a user name or password');
  return url;
}

/** Where to connect for `url`: an address its name resolves to, checked. Throws RefusedWebhookAddress. */
export async function resolveWebhookAddress(url: URL, allowPrivate: boolean): Promise<{ address: string; family: 4 | 6 }> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = net.isIP(host);
  const addresses = literal ? [{ address: host, family: literal as 4 | 6 }] : ((await dns.lookup(host, { all: true, verbatim: true })) as { address: string; family: 4 | 6 }[]);
  if (addresses.length === 0) throw new RefusedWebhookAddress(`${host} does not resolve`);
  if (!allowPrivate) {
    // Every answer is checked, not only the one used: a name that mixes public and private
    // addresses is refused as a whole.
    const bad = addresses.find(({ address }) => isRefusedAddress(address));
    if (bad) throw new RefusedWebhookAddress(`${host} resolves to ${bad.address}, a loopback, private, link-local or reserved address`);
  }
  return addresses[0]!;
}
