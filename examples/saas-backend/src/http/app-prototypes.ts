import http from 'node:http';
import type { Socket } from 'node:net';
import type { Express } from 'express';

/**
 * Requests and responses that Node makes with the Express app's own prototypes, for
 * `http.createServer({ IncomingMessage, ServerResponse })`; `adopt(app)` says which app.
 *
 * Why: Express gives every request and response its app's prototypes as they enter the app
 * (`Object.setPrototypeOf(req, app.request)` in `app.handle`). Changing an object's prototype
 * after it was made is one of the slowest things a V8 program can do: each request and response
 * gets a hidden class of its own, code that reads them loses its fast paths, and a large share of
 * each request's short-lived objects survives the young-generation collections, so the process
 * runs a full collection several times a second. When Node makes them with those prototypes in
 * the first place, Express's call is asked to set the prototype they already have, which changes
 * nothing. Express is otherwise untouched: same `req`, same `res`, same methods. Measured in
 * bench/README.md ("Requests born with the app's prototypes"); reported upstream as
 * expressjs/express#5998 and nodejs/node#37457.
 */
export function appPrototypes() {
  // Node makes each request with `new IncomingMessage(socket)`, so it gets `IncomingMessage.prototype`:
  // Node's own until `adopt` (the server may answer a 503 while the app is being made), the app's after.
  // Node's constructors run on it as plain functions (they are functions, not classes); V8
  // gives every object made this way one shared hidden class. `Reflect.construct` with this
  // function as `newTarget` would not: V8 makes a new hidden class for each object it makes that way.
  function IncomingMessage(this: http.IncomingMessage, socket: Socket) {
    Reflect.apply(http.IncomingMessage, this, [socket]);
  }
  function ServerResponse(this: http.ServerResponse, req: http.IncomingMessage, options?: object) {
    Reflect.apply(http.ServerResponse, this, [req, options]);
  }
  IncomingMessage.prototype = http.IncomingMessage.prototype;
  ServerResponse.prototype = http.ServerResponse.prototype;

  return {
    IncomingMessage: IncomingMessage as unknown as typeof http.IncomingMessage,
    ServerResponse: ServerResponse as unknown as typeof http.ServerResponse,
    /** From now on, requests and responses are born as `app`'s. */
    adopt(app: Express) {
      IncomingMessage.prototype = app.request;
      ServerResponse.prototype = app.response;
    },
  };
}
