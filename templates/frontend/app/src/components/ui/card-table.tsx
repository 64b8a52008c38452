import type { ReactNode } from 'react';

/**
 * A list as a table in its own scrolling box, whose rows become cards below 640 px (a phone):
 * give each cell its column's name as `data-label`, which the card shows above it.
 */
export function CardTable({ label, columns, children }: { label: string; columns: string[]; children: ReactNode }) {
  return (
    <div className="table-wrap">
      <table aria-label={label} className="cards">
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column} scope="col">
                {column}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
