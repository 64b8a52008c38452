import http from 'node:http';
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
  // Subclasses that add nothing, so that V8 makes every request (and every response) with one
  // shared hidden class and room for all of Node's fields, as it does for Node's own classes.
  // Two ways that look simpler are slower (bench/README.md, "A hidden class per request"):
  // Node's constructor run on our object as a plain function leaves each response with its
  // fields in a dictionary (more than V8 expects an object of our function to get), and
  // `Reflect.construct` with a plain function as `new.target` makes a new hidden class per object.
  class IncomingMessage extends http.IncomingMessage {}
  class ServerResponse extends http.ServerResponse {}

  return {
    IncomingMessage: IncomingMessage as typeof http.IncomingMessage,
    ServerResponse: ServerResponse as typeof http.ServerResponse,
    /**
     * From now on, requests and responses are born as `app`'s. A class's prototype cannot be
     * replaced, so the app's prototypes move in behind ours (once, before any request reaches the
     * app) and ours become the app's: `app.request` and `app.response` are what Express gives
     * every request and response, and what a developer extends (`app.response.sendCsv = ...`).
     */
    adopt(app: Express) {
      Object.setPrototypeOf(IncomingMessage.prototype, app.request);
      Object.setPrototypeOf(ServerResponse.prototype, app.response);
      app.request = IncomingMessage.prototype as typeof app.request;
      app.response = ServerResponse.prototype as typeof app.response;
    },
  };
}
