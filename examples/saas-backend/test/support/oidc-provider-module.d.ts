// oidc-provider 9 ships no types (@types/oidc-provider lags behind it): what test/support/oidc-provider.ts uses of it.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface Interaction {
    uid: string;
    prompt: { name: string; reasons: string[]; details: Record<string, unknown> };
    params: Record<string, unknown>;
    session?: { accountId: string };
  }
  class Grant {
    constructor(properties: { accountId: string; clientId: string });
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
  }
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    Grant: typeof Grant;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
    interactionFinished(req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>, options?: { mergeWithLastSubmission?: boolean }): Promise<void>;
    on(event: string, listener: (...args: unknown[]) => void): this;
    use(middleware: (ctx: { path: string; body: unknown }, next: () => Promise<void>) => Promise<void>): void;
  }
}

declare module 'oidc-provider/lib/adapters/memory_adapter.js' {
  export function createMemoryAdapter(clockTolerance?: number): (model: string) => object;
}
