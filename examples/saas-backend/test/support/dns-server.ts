import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import dns2 from 'dns2';

/**
 * A DNS server on loopback (UDP, `dns2`) whose TXT records the test sets and removes while it runs,
 * for the backend's resolver (DNS_SERVERS=<address>). A name it has no records for is NXDOMAIN; a
 * name set to `servfail` answers SERVFAIL; a name set to `silent` gets no answer at all (the
 * resolver times out). It counts the TXT questions per name, and can delay its answers.
 */
export interface DnsServer {
  /** `127.0.0.1:<port>`, as DNS_SERVERS takes it. */
  address: string;
  /** The TXT values at `name` from now on (several records, one value each). */
  setTxt(name: string, values: string[]): void;
  /** SERVFAIL, or no answer at all, for `name` from now on. */
  misbehave(name: string, how: 'servfail' | 'silent'): void;
  /** `name` is gone: NXDOMAIN from now on. */
  remove(name: string): void;
  /** How many TXT questions `name` got. */
  questionsFor(name: string): number;
  /** Every answer waits this long (to make two checkers overlap). */
  delayMs: number;
  close(): Promise<void>;
}

const key = (name: string) => name.toLowerCase().replace(/\.$/, '');

export async function startDnsServer(): Promise<DnsServer> {
  const { Packet, UDPServer } = dns2;
  const records = new Map<string, string[] | 'servfail' | 'silent'>();
  const questions = new Map<string, number>();
  const server = new UDPServer({ type: 'udp4' });
  const state = { delayMs: 0 };

  server.on('request', (request, send) => {
    const question = request.questions[0];
    if (!question) return;
    const name = key(question.name);
    if (question.type === Packet.TYPE.TXT) questions.set(name, (questions.get(name) ?? 0) + 1);
    const found = records.get(name);
    if (found === 'silent') return;
    const response = Packet.createResponseFromRequest(request);
    if (found === 'servfail') response.header.rcode = 2;
    else if (found === undefined) response.header.rcode = 3;
    else if (question.type === Packet.TYPE.TXT) {
      for (const value of found) response.answers.push({ name: question.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 1, data: value });
    }
    setTimeout(() => void send(response).catch(() => {}), state.delayMs);
  });
  server.on('requestError', () => {});
  await server.listen(0, '127.0.0.1');
  const { port } = server.address() as AddressInfo;

  return {
    address: `127.0.0.1:${port}`,
    setTxt: (name, values) => void records.set(key(name), values),
    misbehave: (name, how) => void records.set(key(name), how),
    remove: (name) => void records.delete(key(name)),
    questionsFor: (name) => questions.get(key(name)) ?? 0,
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(ms: number) {
      state.delayMs = ms;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A UDP port on loopback that takes every question and answers none: a DNS server that is down. */
export async function startSilentDnsServer(): Promise<{ address: string; questions(): number; close(): Promise<void> }> {
  const socket = dgram.createSocket('udp4');
  let received = 0;
  socket.on('message', () => {
    received += 1;
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  const { port } = socket.address();
  return {
    address: `127.0.0.1:${port}`,
    questions: () => received,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
