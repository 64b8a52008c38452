import { officialSuites } from './support/official-suites.js';

// Better Auth's own adapter suites on the embedded database (see support/official-suites.ts).
await officialSuites('embedded');
