import { z } from 'zod';

// Both bounds count UTF-8 bytes, as bcrypt does: 8 to 72 (an ASCII character is one byte, most
// accented letters two, an emoji four). bcrypt reads only the first 72 bytes, so a longer password
// is refused rather than cut short.
const passwordBytes = (password: string) => Buffer.byteLength(password, 'utf8');
/** A new password (sign-up, reset, change). */
export const passwordSchema = z
  .string()
  .max(1024, 'Password must be at most 72 bytes')
  .refine((password) => passwordBytes(password) >= 8, 'Password must be at least 8 bytes (8 plain letters or digits)')
  .refine((password) => passwordBytes(password) <= 72, 'Password must be at most 72 bytes');
