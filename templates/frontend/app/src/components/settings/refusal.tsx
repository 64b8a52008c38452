import Link from 'next/link';

/** What a member sees on a page for owners and admins (a link someone sent, a bookmark): why not, and where to go. */
export function Refusal({ what, organization, role }: { what: string; organization: string; role: string }) {
  return (
    <section className="card">
      <h1>You cannot manage {what} here</h1>
      <p>
        Only the owners and admins of {organization} can. Your role there is {role}; ask an owner or an admin if you need this.
      </p>
      <p>
        <Link href="/settings/members">See the members</Link>
      </p>
    </section>
  );
}

/** Before the organizations are read, and when the user has none. */
export function NoOrganization({ loaded }: { loaded: boolean }) {
  return loaded ? (
    <section className="card">
      <h1>No organization</h1>
      <p>You belong to no organization. Create one with the organization menu at the top.</p>
    </section>
  ) : (
    <p className="muted" role="status">
      Loading…
    </p>
  );
}
