import { fail, pass, type Check } from './check.js';

/** The docs page and the OpenAPI document it shows (which other probes read the collections from). */
export const apiDocs: Check = {
  id: 'api-docs',
  title: 'OpenAPI docs at /api/docs',
  probe: {
    needs: 'http',
    async run({ http, openApi }) {
      const page = await http('GET', '/api/docs/', { trusted: true });
      if (page.status !== 200 || !page.text.includes('swagger')) return fail(`GET /api/docs answered ${page.status}`);
      const document = await openApi();
      if (!document || !String(document.openapi).startsWith('3.')) return fail('GET /api/docs/openapi.json did not answer an OpenAPI 3 document');
      return pass(`page and OpenAPI ${document.openapi} document, ${Object.keys(document.paths).length} paths`);
    },
  },
  advice: "src/app.ts must mount docsRouter at /api/docs (setup's app.ts does; compare with a new project's)",
};
