// How `changeset version` writes an entry into a package's CHANGELOG.md: the changeset's text as
// its author wrote it, with no commit hash or pull-request link in front (the entries say what
// changed and what a user must do; `git log` has the rest). Changesets' own default adds the hash.
const indent = (text) => text.split('\n').map((line) => (line ? `  ${line}` : line)).join('\n');

/** One changeset: its first line is the bullet, the rest (lists, commands) stays under it. */
async function getReleaseLine(changeset) {
  const [first, ...rest] = changeset.summary.trim().split('\n');
  const more = rest.join('\n').trim();
  return `- ${first}${more ? `\n\n${indent(more)}` : ''}\n`;
}

/** A workspace package this one depends on was released: the packages here depend on none. */
async function getDependencyReleaseLine(_changesets, dependenciesUpdated) {
  if (dependenciesUpdated.length === 0) return '';
  return dependenciesUpdated.map((dependency) => `- ${dependency.name} ${dependency.newVersion}`).join('\n');
}

module.exports = { default: { getReleaseLine, getDependencyReleaseLine } };
