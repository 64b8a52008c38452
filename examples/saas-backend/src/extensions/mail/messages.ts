/**
 * The mail the backend sends, as text and HTML. This file is yours: the generator created it once
 * and never writes it again. Change the wording, add your product's name and colours; keep every
 * value that came from a user going through `escapeHtml` in HTML, and names that anyone can choose
 * (an organization's, a user's) through `asPlainText`, so that no one can put a link of theirs
 * into mail that comes from you.
 */

export interface Message {
  subject: string;
  text: string;
  html: string;
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);
}

/**
 * A name as text that mail programs will not turn into a link: `Urgent: visit evil.example/login`
 * becomes `Urgent: visit evil[.]example/login`, and `http://` becomes `http[:]//`.
 */
export function asPlainText(name: string): string {
  return name
    .replace(/[\r\n\t]+/g, ' ')
    .replace(/:\/\//g, '[:]//')
    .replace(/([\p{L}\p{N}-])\.(?=[\p{L}\p{N}-])/gu, '$1[.]');
}

/** One message: a greeting, a paragraph, one button with the link (and the link as text), a footnote. */
function message(subject: string, parts: { greeting: string; body: string; action?: { label: string; link: string }; footnote: string }): Message {
  const { greeting, body, action, footnote } = parts;
  const text = [greeting, '', body, ...(action ? ['', `${action.label}: ${action.link}`] : []), '', footnote].join('\n');
  const button = action
    ? `<p><a href="${escapeHtml(action.link)}" style="display:inline-block;padding:10px 18px;background:#111827;color:#ffffff;border-radius:6px;text-decoration:none">${escapeHtml(action.label)}</a></p>
<p style="font-size:13px;color:#6b7280">Or paste this address into your browser:<br>${escapeHtml(action.link)}</p>`
    : '';
  const html = `<!doctype html>
<html><body style="font-family:system-ui,sans-serif;line-height:1.5;color:#111827">
<p>${escapeHtml(greeting)}</p>
<p>${escapeHtml(body)}</p>
${button}
<p style="font-size:13px;color:#6b7280">${escapeHtml(footnote)}</p>
</body></html>
`;
  return { subject, text, html };
}

const hello = (name: string | undefined) => (name ? `Hello ${asPlainText(name)},` : 'Hello,');

export const messages = {
  verifyEmail: (to: { name?: string; link: string }) =>
    message('Confirm your e-mail address', {
      greeting: hello(to.name),
      body: 'Please confirm that this is your e-mail address. The link works for 24 hours.',
      action: { label: 'Confirm my address', link: to.link },
      footnote: 'If you did not sign up, ignore this message: nothing happens without the link.',
    }),

  resetPassword: (to: { name?: string; link: string }) =>
    message('Reset your password', {
      greeting: hello(to.name),
      body: 'Someone asked to reset the password of the account with this address. The link works for one hour, once. Resetting signs you out everywhere.',
      action: { label: 'Choose a new password', link: to.link },
      footnote: 'If it was not you, ignore this message: your password stays as it is.',
    }),

  passwordChanged: (to: { name?: string }) =>
    message('Your password was changed', {
      greeting: hello(to.name),
      body: 'The password of your account was just changed, and your other sessions were signed out.',
      footnote: 'If this was not you, reset your password at once with "Forgot password".',
    }),

  invitation: (to: { name?: string; organizationName: string; inviterName: string; role: string; link: string }) =>
    message(`You are invited to join ${asPlainText(to.organizationName)}`, {
      greeting: hello(to.name),
      body: `${asPlainText(to.inviterName)} invited you to join the organization "${asPlainText(to.organizationName)}" as ${to.role}. The invitation works for 7 days.`,
      action: { label: 'See the invitation', link: to.link },
      footnote: 'If you do not know them, ignore this message: nobody joins without accepting.',
    }),

  confirmEmailChange: (to: { name?: string; newEmail: string; link: string }) =>
    message('Confirm your new e-mail address', {
      greeting: hello(to.name),
      body: `Please confirm that ${to.newEmail} is your new e-mail address. The link works for 24 hours.`,
      action: { label: 'Confirm the new address', link: to.link },
      footnote: 'If you did not ask for this, ignore this message: your address stays as it is.',
    }),

  emailChangeRequested: (to: { name?: string; newEmail: string }) =>
    message('Your e-mail address is about to change', {
      greeting: hello(to.name),
      body: `Someone signed in to your account asked to change its e-mail address to ${asPlainText(to.newEmail)}. It changes once the new address is confirmed.`,
      footnote: 'If this was not you, change your password at once and sign out your other sessions.',
    }),

  webhookEndpointDisabled: (to: { name?: string; organizationName: string; url: string; failures: number }) =>
    message(`A webhook endpoint of ${asPlainText(to.organizationName)} was disabled`, {
      greeting: hello(to.name),
      body: `The last ${to.failures} deliveries to the webhook endpoint ${asPlainText(to.url)} of "${asPlainText(to.organizationName)}" failed, so it was disabled: no more events are sent to it.`,
      footnote: 'Fix the receiver, then enable the endpoint again and redeliver what failed from its delivery log.',
    }),
};
