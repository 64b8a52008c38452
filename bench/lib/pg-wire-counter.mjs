// A loopback TCP proxy in front of PostgreSQL that reads what clients send (the frontend side of
// the wire protocol) and counts it. It changes nothing: bytes go through as they came.
//
// What it counts, per message type (https://www.postgresql.org/docs/current/protocol-message-formats.html):
//   'Q' Query    a simple-protocol statement: one statement, one round trip
//   'P' Parse    an extended-protocol statement's SQL text (kept, to list what ran)
//   'E' Execute  one extended-protocol statement run
//   'S' Sync     the end of an extended-protocol exchange: the client waits for ReadyForQuery,
//                so each Sync is one round trip
// statements = Q + E, round trips = Q + S.
import net from 'node:net';

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

export function startWireCounter({ upstreamHost, upstreamPort }) {
  const totals = { Q: 0, P: 0, E: 0, S: 0 };
  const texts = new Map(); // SQL text -> times sent (Parse or Query)
  const sockets = new Set();

  const record = (type, body) => {
    if (type in totals) totals[type] += 1;
    let sql;
    if (type === 'Q') sql = body.subarray(0, body.indexOf(0)).toString('utf8');
    if (type === 'P') {
      const nameEnd = body.indexOf(0); // the statement name, empty for an unnamed one
      sql = body.subarray(nameEnd + 1, body.indexOf(0, nameEnd + 1)).toString('utf8');
    }
    if (sql !== undefined) {
      const normalised = sql.replace(/\s+/g, ' ').trim();
      texts.set(normalised, (texts.get(normalised) ?? 0) + 1);
    }
  };

  const server = net.createServer((client) => {
    const upstream = net.connect({ host: upstreamHost, port: upstreamPort });
    sockets.add(client).add(upstream);
    let buffer = Buffer.alloc(0);
    let startup = true; // the first message(s) have no type byte

    client.on('data', (chunk) => {
      upstream.write(chunk);
      buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
      // Bounded by the buffer: every pass consumes one whole message or stops.
      for (;;) {
        if (startup) {
          if (buffer.length < 8) break;
          const length = buffer.readInt32BE(0);
          if (buffer.length < length) break;
          const code = buffer.readInt32BE(4);
          // An SSL/GSS request is followed by the real startup message.
          if (code !== SSL_REQUEST && code !== GSSENC_REQUEST) startup = false;
          buffer = buffer.subarray(length);
          continue;
        }
        if (buffer.length < 5) break;
        const length = buffer.readInt32BE(1);
        if (buffer.length < 1 + length) break;
        record(String.fromCharCode(buffer[0]), buffer.subarray(5, 1 + length));
        buffer = buffer.subarray(1 + length);
      }
    });
    upstream.pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve({
        port: server.address().port,
        /** A copy of the counts so far; diff two snapshots to count one stretch of traffic. */
        snapshot: () => ({ totals: { ...totals }, texts: new Map(texts) }),
        close: () =>
          new Promise((done) => {
            for (const socket of sockets) socket.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}

/** What was sent between two snapshots, divided by the number of requests made in between. */
export function perRequest(before, after, requests) {
  const delta = (type) => after.totals[type] - before.totals[type];
  const statements = delta('Q') + delta('E');
  const roundTrips = delta('Q') + delta('S');
  const texts = [];
  for (const [sql, count] of after.texts) {
    const sent = count - (before.texts.get(sql) ?? 0);
    if (sent > 0) texts.push({ sql, perRequest: sent / requests });
  }
  return {
    requests,
    statements,
    roundTrips,
    statementsPerRequest: statements / requests,
    roundTripsPerRequest: roundTrips / requests,
    sql: texts,
  };
}
