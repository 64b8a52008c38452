'use client';

import { useRouter } from 'next/navigation';
import { useEffect, useState } from 'react';
import { managesOrganization, useOrganizations } from '@/components/organization-provider';
import { OutcomeMessage, useAction } from '@/components/ui/action';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { api } from '@/lib/api';
import { NoOrganization } from './refusal';

/**
 * The organization's name and slug: owners and admins change them, members read them. Owners
 * delete it, with everything in it, after typing its slug.
 */
export function GeneralSettings() {
  const router = useRouter();
  const { active, loaded, refresh } = useOrganizations();
  const [organization, setOrganization] = useState<{ id: string; name: string; slug: string }>();
  const save = useAction(async (fields: FormData) => {
    const updated = await api.Organization.update(active!.id, { name: String(fields.get('name')), slug: String(fields.get('slug')) });
    setOrganization(updated);
    await refresh();
    return 'Saved.';
  });
  const remove = useAction(async () => {
    await api.Organization.delete(active!.id);
    await refresh();
    router.push('/');
  });

  useEffect(() => {
    if (active) api.Organization.get(active.id).then(setOrganization, () => setOrganization(undefined));
  }, [active]);

  if (!active) return <NoOrganization loaded={loaded} />;
  const manages = managesOrganization(active.role);
  return (
    <div className="grid gap-6">
      <section className="card">
        <h1>General</h1>
        <form
          key={organization?.id}
          className="stack max-w-md"
          aria-label="Organization details"
          onSubmit={(event) => {
            event.preventDefault();
            void save.run(new FormData(event.currentTarget));
          }}
        >
          <label>
            Name
            <input name="name" defaultValue={organization?.name ?? active.name} minLength={1} required readOnly={!manages} />
          </label>
          <label>
            Slug
            <input name="slug" defaultValue={organization?.slug ?? active.slug} minLength={2} required readOnly={!manages} />
          </label>
          {manages ? (
            <div>
              <button type="submit" disabled={save.pending}>
                Save
              </button>
            </div>
          ) : (
            <p className="muted">Only owners and admins change these.</p>
          )}
          <OutcomeMessage outcome={save.outcome} pending={save.pending} pendingText="Saving…" />
        </form>
      </section>
      {active.role === 'owner' && (
        <section className="card border-red-200" aria-labelledby="delete-organization">
          <h2 id="delete-organization">Delete this organization</h2>
          <p className="muted mb-3">Its members lose access, and every record in it is deleted. This cannot be undone.</p>
          <ConfirmButton
            label="Delete organization"
            title={`Delete ${active.name}?`}
            description={<p>Every member loses access and every record of {active.name} is deleted, at once and for good.</p>}
            confirmLabel="Delete for good"
            typeToConfirm={organization?.slug ?? active.slug}
            onConfirm={() => remove.run()}
          />
          <OutcomeMessage outcome={remove.outcome} pending={remove.pending} pendingText="Deleting…" />
        </section>
      )}
    </div>
  );
}
