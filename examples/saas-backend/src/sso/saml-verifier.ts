import { Worker } from 'node:worker_threads';
import { SamlProblem, type SamlSettings, type VerifiedAssertion } from './saml.js';

/**
 * The ACS's XML work on worker threads: the algorithm policy (saml-policy.ts) and node-saml's
 * signature check (saml.ts verifyResponse) cost about 7 ms of CPU a response, nearly all of it
 * parsing, XPath and canonicalization inside node-saml and xml-crypto. On the main thread those
 * milliseconds hold up every other request of the instance; on a thread of their own they do not,
 * and responses are checked on several cores at once (bench/README.md, "SSO sign-in").
 *
 * Threads start as they are needed: a new one when each running thread has a response in hand, up
 * to SSO_SAML_THREADS. A response goes to the thread with the fewest in hand. What crosses is plain
 * data (the connection's settings, the XML, the flow's request) and what comes back is the verified
 * assertion or the SamlProblem's message, so the ACS sees the same answers as if it checked itself.
 */

/** The AuthnRequest a response must answer (the flow's), or null for an IdP-initiated one. */
export type ExpectedRequest = { requestId: string; createdAt: Date } | null;

export interface SamlVerifier {
  /** checkResponsePolicy, then verifyResponse, on a thread: resolves as verifyResponse, rejects with the same SamlProblem. */
  verify(settings: SamlSettings, xml: string, expected: ExpectedRequest): Promise<VerifiedAssertion>;
  /** Ends the threads (the server's stop); a response still on one fails. */
  close(): Promise<void>;
}

/** To a thread: one response. */
export interface VerifyRequest {
  id: number;
  settings: SamlSettings;
  xml: string;
  expected: ExpectedRequest;
}

/** From a thread: its answer to request `id`; `failure` is an error that is not a refusal (a bug: the ACS answers 500). */
export type VerifyAnswer = { id: number; verified: VerifiedAssertion } | { id: number; problem: string } | { id: number; failure: string };

interface Pending {
  resolve(verified: VerifiedAssertion): void;
  reject(error: Error): void;
}

interface Thread {
  worker: Worker;
  inHand: Map<number, Pending>;
}

export function createSamlVerifier({ threads }: { threads: number }): SamlVerifier {
  const pool: Thread[] = [];
  let lastId = 0;
  let closed = false;

  const startThread = (): Thread => {
    const thread: Thread = { worker: startWorker(), inHand: new Map() };
    // A thread never keeps the process alive: the server does, while it has requests.
    thread.worker.unref();
    thread.worker.on('message', (answer: VerifyAnswer) => {
      const pending = thread.inHand.get(answer.id);
      thread.inHand.delete(answer.id);
      if ('verified' in answer) pending?.resolve(answer.verified);
      else if ('problem' in answer) pending?.reject(new SamlProblem(answer.problem));
      else pending?.reject(new Error(`SAML verification failed on its thread: ${answer.failure}`));
    });
    // A thread that fails or ends takes only its own responses with it; the next response starts another.
    const lost = (error: Error) => {
      if (pool.includes(thread)) pool.splice(pool.indexOf(thread), 1);
      for (const pending of thread.inHand.values()) pending.reject(error);
      thread.inHand.clear();
    };
    thread.worker.on('error', lost);
    thread.worker.on('exit', (code) => lost(new Error(`the SAML verification thread exited (code ${code})`)));
    pool.push(thread);
    return thread;
  };

  const leastBusy = (): Thread => {
    const idle = pool.find((thread) => thread.inHand.size === 0);
    if (idle) return idle;
    if (pool.length < threads) return startThread();
    return pool.reduce((best, thread) => (thread.inHand.size < best.inHand.size ? thread : best));
  };

  return {
    verify(settings, xml, expected) {
      if (closed) return Promise.reject(new Error('the SAML verifier is closed'));
      const thread = leastBusy();
      const id = ++lastId;
      return new Promise<VerifiedAssertion>((resolve, reject) => {
        thread.inHand.set(id, { resolve, reject });
        thread.worker.postMessage({ id, settings, xml, expected } satisfies VerifyRequest);
      });
    },
    async close() {
      closed = true;
      await Promise.all(pool.map((thread) => thread.worker.terminate()));
    },
  };
}

/**
 * A thread running saml-verifier.worker: compiled (dist/), its .js as it is; from the TypeScript
 * sources (`npm run dev`, the tests), which a thread cannot load by itself, through tsx's loader,
 * registered in the thread before the worker's module is imported.
 */
function startWorker(): Worker {
  const fromSources = import.meta.url.endsWith('.ts');
  const entry = new URL(`./saml-verifier.worker.${fromSources ? 'ts' : 'js'}`, import.meta.url);
  if (!fromSources) return new Worker(entry);
  const tsx = import.meta.resolve('tsx/esm/api');
  return new Worker(`import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); })`, { eval: true });
}
