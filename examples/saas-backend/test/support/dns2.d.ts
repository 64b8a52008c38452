// dns2 2.1.0 ships no types (3.x, which does, needs Node 22): what test/support/dns-server.ts uses of it.
declare module 'dns2' {
  import type { Socket } from 'node:dgram';

  interface Question {
    name: string;
    type: number;
    class: number;
  }
  interface Resource {
    name: string;
    type: number;
    class: number;
    ttl: number;
    data?: string | string[];
  }
  class Packet {
    static TYPE: Record<'A' | 'TXT' | 'AAAA' | 'CNAME' | 'MX' | 'NS' | 'SOA', number>;
    static CLASS: Record<'IN' | 'ANY', number>;
    static createResponseFromRequest(request: Packet): Packet;
    header: { id: number; qr: number; rcode: number };
    questions: Question[];
    answers: Resource[];
  }
  class UDPServer extends Socket {
    constructor(options?: { type: 'udp4' | 'udp6' });
    on(event: 'request', listener: (request: Packet, send: (response: Packet) => Promise<unknown>, rinfo: { address: string; port: number }) => void): this;
    on(event: 'requestError', listener: (error: Error) => void): this;
    on(event: string, listener: (...args: any[]) => void): this;
    listen(port: number, address?: string): Promise<void>;
  }
  const dns2: { Packet: typeof Packet; UDPServer: typeof UDPServer };
  export default dns2;
}
