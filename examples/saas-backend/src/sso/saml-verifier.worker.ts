import { parentPort } from 'node:worker_threads';
import { checkResponsePolicy } from './saml-policy.js';
import { SamlProblem, verifyResponse } from './saml.js';
import type { VerifyAnswer, VerifyRequest } from './saml-verifier.js';

/**
 * One thread of saml-verifier.ts: each response it is sent goes through the algorithm policy, then
 * node-saml's verification, exactly as the ACS would on the main thread, and is answered by its id.
 */
parentPort!.on('message', async ({ id, settings, xml, expected }: VerifyRequest) => {
  let answer: VerifyAnswer;
  try {
    await checkResponsePolicy(xml, settings.acsUrl, settings.spPrivateKey);
    answer = { id, verified: await verifyResponse(settings, Buffer.from(xml).toString('base64'), expected) };
  } catch (error) {
    answer = error instanceof SamlProblem ? { id, problem: error.message } : { id, failure: (error as Error)?.stack ?? String(error) };
  }
  parentPort!.postMessage(answer);
});
