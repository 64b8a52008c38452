/**
 * V8 settings for a process that serves requests, set before any other module runs (index.ts
 * imports this first).
 *
 * `--no-allocation-site-pretenuring`. V8 remembers where objects are made (allocation sites)
 * and, when it sees most of a site's objects outlive young-generation collections, makes that
 * site's later objects straight in the old generation, which only a full collection frees. Here
 * that happens to sites that make every request's objects (zod's parse of the list parameters,
 * among others): each request then left about 400 bytes for full collections, one every two
 * seconds under load, and each of those pauses every request in flight. Without it: about 35
 * bytes, no full collection, 6 % more requests per second and the slowest 1 % a fifth faster
 * (bench/README.md, "A hidden class per request, and pretenuring"). What does live long (the
 * app, its schemas, the pool) is made at start-up, where one more copy of it costs nothing that
 * matters.
 *
 * A Node whose V8 no longer knows the flag says so on stderr and goes on, without the gain.
 */
import v8 from 'node:v8';

v8.setFlagsFromString('--no-allocation-site-pretenuring');
