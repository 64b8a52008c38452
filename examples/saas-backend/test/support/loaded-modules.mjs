// Preloaded into a backend process (`node --import ./test/support/loaded-modules.mjs`): every
// module the process imports is written to the file named by LOADED_MODULES_FILE, one URL a line,
// so that a test can tell what was loaded and what was not.
import { register } from 'node:module';

register('./loaded-modules-hooks.mjs', import.meta.url, { data: { file: process.env.LOADED_MODULES_FILE } });
