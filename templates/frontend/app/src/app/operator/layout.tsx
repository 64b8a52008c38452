import { redirect } from 'next/navigation';
import type { ReactNode } from 'react';
import { OperatorSection } from '@/components/operator/operator-section';
import { currentSession } from '@/lib/session';

/** The operator's pages (docs/operator.md in authstrap): signed in only; the backend decides who is an operator. */
export default async function OperatorLayout({ children }: { children: ReactNode }) {
  const session = await currentSession();
  if (!session) redirect('/sign-in');
  return <OperatorSection>{children}</OperatorSection>;
}
