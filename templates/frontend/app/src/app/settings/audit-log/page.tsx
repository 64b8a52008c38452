import { AuditLogSettings } from '@/components/settings/audit-log';

/** The organization's settings: its audit log, filtered, charted per day and exported as CSV. */
export default function Page() {
  return <AuditLogSettings />;
}
