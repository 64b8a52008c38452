import bcrypt from 'bcryptjs';

/**
 * The password hash of an authstrap backend (bcrypt, as in `account.password`), for Better Auth's
 * `emailAndPassword.password`, so that a user who signed up on one path signs in on the other:
 *
 *   betterAuth({ emailAndPassword: { enabled: true, password: authstrapPassword() } })
 *
 * `cost` is the backend's BCRYPT_COST (12 by default). bcrypt reads 72 bytes at most, so a
 * longer password is refused rather than silently cut, as the backend does.
 */
export function authstrapPassword({ cost = 12 }: { cost?: number } = {}) {
  const maxBytes = 72;
  return {
    async hash(password: string): Promise<string> {
      if (Buffer.byteLength(password, 'utf8') > maxBytes) throw new Error('Password must be at most 72 bytes');
      return bcrypt.hash(password, cost);
    },
    async verify({ hash, password }: { hash: string; password: string }): Promise<boolean> {
      if (Buffer.byteLength(password, 'utf8') > maxBytes) return false;
      return bcrypt.compare(password, hash);
    },
  };
}
