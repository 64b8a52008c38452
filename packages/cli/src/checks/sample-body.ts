import { randomUUID } from 'node:crypto';
import type { JsonSchema } from './collections.js';

/**
 * A valid create body for a collection, from its JSON schema (the OpenAPI document's, made from
 * the zod schema that validates it): every required field with a value of its type that meets
 * its enum, lengths, bounds and format. Optional fields are left out. A reference
 * (`x-references`) takes the id `reference` gives for that entity. Pure but for fresh uuids.
 */

export type SampleBody = { body: Record<string, unknown> } | { problem: string };

export interface SampleOptions {
  /** Makes strings differ between runs and records (unique fields). */
  unique: string;
  /** The id of a record of `entity` to point at (a uuid, or a number for a numbered table), if there is one. */
  reference(entity: string): string | number | undefined;
}

/** The entities the required fields of a body point at (those need a record first). */
export function requiredReferences(schema: JsonSchema | undefined): string[] {
  const references = (schema?.required ?? []).map((name: string) => schema!.properties?.[name]?.['x-references']).filter((entity: unknown): entity is string => typeof entity === 'string');
  return [...new Set<string>(references)];
}

export function sampleBody(schema: JsonSchema | undefined, options: SampleOptions): SampleBody {
  if (!schema || (schema.type !== undefined && schema.type !== 'object')) return { problem: 'its create body is not a JSON object' };
  const body: Record<string, unknown> = {};
  for (const name of schema.required ?? []) {
    const value = sampleValue(schema.properties?.[name] ?? {}, name, options);
    if (value instanceof Problem) return { problem: value.message };
    body[name] = value;
  }
  return { body };
}

class Problem {
  constructor(readonly message: string) {}
}

function sampleValue(property: JsonSchema, name: string, options: SampleOptions): unknown {
  const references = property['x-references'];
  if (typeof references === 'string') return options.reference(references) ?? new Problem(`${name} needs a ${references}, which could not be made`);
  if (Array.isArray(property.enum)) return property.enum.find((value: unknown) => value !== null) ?? null;
  if ('const' in property) return property.const;
  const alternatives = property.anyOf ?? property.oneOf;
  if (Array.isArray(alternatives)) {
    const chosen = alternatives.find((alternative: JsonSchema) => alternative.type !== 'null') ?? alternatives[0];
    return chosen ? sampleValue(chosen, name, options) : null;
  }
  const type = Array.isArray(property.type) ? property.type.find((candidate: string) => candidate !== 'null') : property.type;
  switch (type) {
    case 'string':
      return sampleString(property, name, options.unique);
    case 'integer':
    case 'number':
      return sampleNumber(property, type === 'integer' || property.multipleOf === 1);
    case 'boolean':
      return false;
    case 'object': {
      const nested = sampleBody(property, options);
      return 'problem' in nested ? new Problem(`${name}: ${nested.problem}`) : nested.body;
    }
    case 'array': {
      const count = property.minItems ?? 0;
      const items = Array.from({ length: count }, () => sampleValue(property.items ?? {}, name, options));
      return items.find((item) => item instanceof Problem) ?? items;
    }
    case 'null':
      return null;
    case undefined:
      // A JSON field: anything goes.
      return {};
    default:
      return new Problem(`${name} has a type verify cannot fill in (${String(type)})`);
  }
}

function sampleString(property: JsonSchema, name: string, unique: string): unknown {
  switch (property.format) {
    case 'email':
      return `verify-${unique}@example.com`;
    case 'uuid':
      return randomUUID();
    case 'date-time':
      return new Date().toISOString();
    case 'date':
      return new Date().toISOString().slice(0, 10);
    case 'uri':
    case 'url':
      return `https://example.com/verify-${unique}`;
    case undefined:
      break;
    default:
      return new Problem(`${name} has a string format verify cannot fill in (${property.format})`);
  }
  if (property.pattern !== undefined) return new Problem(`${name} must match a pattern (${property.pattern})`);
  const min = property.minLength ?? 0;
  const max = property.maxLength ?? Math.max(min, 100);
  if (max < min) return new Problem(`${name} has maxLength below minLength`);
  return `verify ${unique}`.padEnd(min, 'x').slice(0, max);
}

function sampleNumber(property: JsonSchema, integer: boolean): unknown {
  const step = integer ? 1 : 0.5;
  const low = property.minimum ?? (typeof property.exclusiveMinimum === 'number' ? property.exclusiveMinimum + step : undefined);
  const high = property.maximum ?? (typeof property.exclusiveMaximum === 'number' ? property.exclusiveMaximum - step : undefined);
  let value = low ?? Math.min(1, high ?? 1);
  if (integer) value = Math.ceil(value);
  if (high !== undefined && value > high) return new Problem('a number between its bounds could not be found');
  return value;
}
