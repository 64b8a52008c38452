/** SQL text: identifiers and string literals, quoted as PostgreSQL reads them. */
export const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`;
export const literal = (value: string) => `'${value.replace(/'/g, "''")}'`;
