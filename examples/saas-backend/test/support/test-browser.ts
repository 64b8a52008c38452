/**
 * A browser, as far as the tests need one: a cookie jar per origin, redirects followed by hand
 * while they stay on `origins` (the identity provider and the backend). Returns the first answer that is
 * not a redirect to one of them, with the redirects' last Location.
 */
export class TestBrowser {
  readonly jar = new Map<string, Map<string, string>>();

  constructor(private readonly origins: string[]) {}

  cookie(origin: string, name: string): string | undefined {
    return this.jar.get(origin)?.get(name);
  }

  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const origin = new URL(url).origin;
    const cookies = [...(this.jar.get(origin) ?? new Map())].map(([name, value]) => `${name}=${value}`).join('; ');
    const headers = new Headers(init.headers);
    if (cookies) headers.set('cookie', cookies);
    const response = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at).trim();
      const value = pair!.slice(at + 1).trim();
      const cookies = this.jar.get(origin) ?? new Map<string, string>();
      if (value === '' || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) cookies.delete(name);
      else cookies.set(name, value);
      this.jar.set(origin, cookies);
    }
    return response;
  }

  /** Follows `url` through the provider and the backend; `stopAt` ends the walk before a URL is requested (e.g. the callback, to tamper with it). */
  async follow(url: string, stopAt?: (url: URL) => boolean): Promise<{ location: string; response: Response }> {
    let current = url;
    for (let hop = 0; hop < 20; hop++) {
      if (stopAt?.(new URL(current))) return { location: current, response: new Response(null, { status: 599 }) };
      const response = await this.request(current);
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || !location) return { location: current, response };
      const next = new URL(location, current).href;
      if (!this.origins.includes(new URL(next).origin)) return { location: next, response };
      current = next;
    }
    throw new Error(`too many redirects from ${url}`);
  }
}
