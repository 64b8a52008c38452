import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import type { ApiResponse } from './backend.js';

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Fields that must never appear in what the API returns. */
export const secretFields = ['password', 'token', 'accessToken', 'refreshToken', 'idToken'];

/** Fails when a response carries a secret field, a bcrypt hash, or one of `secrets` anywhere in its text. */
export function expectNoSecrets(response: ApiResponse, secrets: string[] = []): void {
  const walk = (value: unknown, at: string): void => {
    if (Array.isArray(value)) value.forEach((item, index) => walk(item, `${at}[${index}]`));
    else if (value && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        expect(secretFields, `${at}.${key}`).not.toContain(key);
        walk(item, `${at}.${key}`);
      }
    } else if (typeof value === 'string') expect(value.startsWith('$2b$'), `${at} is a bcrypt hash`).toBe(false);
  };
  walk(response.body, 'body');
  const text = JSON.stringify(response.body);
  for (const secret of secrets) expect(text.includes(secret), 'a secret in the response text').toBe(false);
}
