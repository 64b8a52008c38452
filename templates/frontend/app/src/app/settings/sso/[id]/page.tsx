import { SsoSettings } from '@/components/settings/sso';

/** Where the backend sends the browser back after a connection's test sign-in: the same page, with what the test found. */
export default async function Page({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return <SsoSettings testedConnectionId={id} />;
}
