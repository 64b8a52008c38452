'use client';

import { useCallback, useEffect, useState } from 'react';

/**
 * What a part of a page reads from the backend: `read` runs whenever it changes (so it is made
 * with useCallback or useMemo, with what it reads as dependencies: the page of a list, the
 * organization) and on `reload()`. A failure is kept as `error`, in the backend's words, beside
 * the data read before. Without `read` nothing is read (a member on a managers' page).
 */
export function useLoad<T>(read: (() => Promise<T>) | undefined) {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const reload = useCallback(async () => {
    if (!read) return;
    try {
      setData(await read());
      setError(undefined);
    } catch (thrown) {
      setError(thrown instanceof Error ? thrown.message : String(thrown));
    }
  }, [read]);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { data, error, reload };
}

/** A read that failed, as an alert. */
export function LoadError({ error }: { error?: string }) {
  if (!error) return null;
  return (
    <p className="error" role="alert">
      {error}
    </p>
  );
}
