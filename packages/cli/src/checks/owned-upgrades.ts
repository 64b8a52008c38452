import { ownedFilesPath, pendingNote } from '../generate/apply.js';
import { fail, pass, warn, type Check } from './check.js';

/**
 * An upgrade of authstrap that changed files the user had changed too, and is not merged yet:
 * `generate` left conflict markers in them, or put its version beside them (no base to merge
 * from). Nothing breaks at once, which is why it must be said every time: the upgrade's fixes
 * are missing until the user merges them (`authstrap resolve`) or says they keep their file
 * (`authstrap decline`). Only the user can settle it, so there is no repair.
 */
export const ownedUpgrades: Check = {
  id: 'owned-upgrades',
  title: 'Every upgrade of the files you own is merged or declined',
  examine(project) {
    if (!project.generatePlan) return warn(`cannot read the schema: ${project.schemaProblem ?? 'unknown problem'}`);
    if (project.generatePlan.problems.length) return warn(`authstrap generate cannot run: ${project.generatePlan.problems.join('; ')}`);
    const pending = project.generatePlan.pendingUpgrades ?? [];
    if (pending.length === 0) return pass(`${ownedFilesPath} has no upgrade waiting`);
    return { ...fail(pendingNote(pending)), fix: `merge each file, then \`authstrap resolve <file>\`; or keep yours with \`authstrap decline <file>\`` };
  },
};
