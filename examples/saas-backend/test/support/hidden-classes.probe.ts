// Run by test/hidden-classes.test.ts as `node --allow-natives-syntax --import tsx <this file>`:
// asks V8 itself whether per-request objects share one hidden class and keep fast properties,
// and prints what it found as JSON. V8's `%` functions need that flag, so they cannot run inside
// the test worker.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { appPrototypes } from '../../src/http/app-prototypes.js';
import { parseListQuery } from '../../src/http/list-query.js';
import { projectListSpec } from '../../src/generated/Project/project.repository.js';

type Check = (a: object, b: object) => boolean;
// V8's own answers; a syntax error without --allow-natives-syntax, which the test gives.
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as Check;
const hasFastProperties = new Function('a', 'return %HasFastProperties(a)') as (a: object) => boolean;

/** Whether every object shares the first one's hidden class, and whether all have fast properties. */
function shapes(objects: object[]) {
  return { sameHiddenClass: objects.every((object) => haveSameMap(objects[0]!, object)), fastProperties: objects.every(hasFastProperties) };
}

// Different parameters, so that a shape shared by accident (one input each time) does not pass.
const listQueries = [{ limit: '20' }, { limit: '5', sort: 'name', order: 'asc' }, { search: 'plan', page: '2' }, { limit: '20' }].map((query) =>
  parseListQuery(query, projectListSpec),
);

const prototypes = appPrototypes();
const app = express();
const seen: { req: http.IncomingMessage; res: http.ServerResponse }[] = [];
app.get('/', (req, res) => {
  seen.push({ req, res });
  res.json({ ok: true });
});
prototypes.adopt(app);
const server = http.createServer({ IncomingMessage: prototypes.IncomingMessage, ServerResponse: prototypes.ServerResponse }, app);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
for (let index = 0; index < 4; index += 1) await (await fetch(url)).json();
server.closeAllConnections();
server.close();

console.log(
  JSON.stringify({
    listQueries: shapes(listQueries),
    requests: { ...shapes(seen.map(({ req }) => req)), appPrototype: seen.every(({ req }) => Object.getPrototypeOf(req) === app.request) },
    responses: { ...shapes(seen.map(({ res }) => res)), appPrototype: seen.every(({ res }) => Object.getPrototypeOf(res) === app.response) },
  }),
);
