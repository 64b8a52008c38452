'use client';

import Link from 'next/link';
import { useEffect, useState, type ReactNode } from 'react';
import { SectionNavigation } from '@/components/ui/section-navigation';
import { AuthstrapError } from '@/lib/authstrap-client';
import { operatorApi } from '@/lib/api';

/** The operator's pages; /operator opens on the overview. */
const pages = [
  { href: '/operator/overview', label: 'Overview' },
  { href: '/operator/users', label: 'Users' },
  { href: '/operator/organizations', label: 'Organizations' },
  { href: '/operator/audit-log', label: 'Audit log' },
];

/**
 * The operator's pages with their navigation, once the backend says the signed-in user is an
 * operator (GET /api/operator/me); anyone else is told what these pages are and how one becomes an
 * operator. The backend refuses them every operator route either way: this only spares them a
 * page of errors.
 */
export function OperatorSection({ children }: { children: ReactNode }) {
  const [operator, setOperator] = useState<{ email: string } | 'refused'>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    operatorApi.me().then(setOperator, (thrown: unknown) => {
      if (thrown instanceof AuthstrapError && thrown.status === 403) setOperator('refused');
      else setError(thrown instanceof Error ? thrown.message : String(thrown));
    });
  }, []);

  if (error) return <p className="error" role="alert">{error}</p>;
  if (!operator) return <p className="muted" role="status">Loading…</p>;
  if (operator === 'refused') return <OperatorsOnly />;
  return (
    <div className="grid gap-6 md:grid-cols-[12rem_1fr]">
      <SectionNavigation label="Operator" caption={`Operator · ${operator.email}`} pages={pages} />
      <div className="min-w-0">{children}</div>
    </div>
  );
}

function OperatorsOnly() {
  return (
    <section className="card">
      <h1>These pages are for operators</h1>
      <p>
        Operators run the platform: they find any user or organization, help them, and stop abuse. You are signed in, but not as an operator, so there is
        nothing here for you.
      </p>
      <p className="muted">
        An operator is made from the command line, by someone with access to the database: <code>authstrap operator grant you@example.com</code>.
      </p>
      <p>
        <Link href="/">Back to the app</Link>
      </p>
    </section>
  );
}

/** The header's way in, shown to operators only (the backend's word on each page load). */
export function OperatorLink() {
  const [operator, setOperator] = useState(false);
  useEffect(() => {
    operatorApi.me().then(
      () => setOperator(true),
      () => setOperator(false),
    );
  }, []);
  return operator ? <Link href="/operator">Operator</Link> : null;
}
