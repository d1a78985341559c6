// Tables: the columns a view declares drawn in the one scrolling wrapper (README, "How to add a
// section", step 5), and a page of a list as the API answers it (error, loading, rows, pager).
import { html } from 'htm/preact';
import { Empty, ErrorNote, Loading, Pager } from './ui.js';

/** A column's class on both its header and cells: only amounts are aligned in the header too. */
function cellClass(column) {
  return [column.amount && 'amount', column.className].filter(Boolean).join(' ') || undefined;
}

function Head({ column }) {
  if (column.hidden) {
    return html`<th scope="col"><span class="visually-hidden">${column.title}</span></th>`;
  }
  return html`<th scope="col" class=${column.amount ? 'amount' : undefined}>${column.title}</th>`;
}

function Cell({ column, row }) {
  if (column.rowHeader) return html`<th scope="row">${column.cell(row)}</th>`;
  return html`<td class=${cellClass(column)}>${column.cell(row)}</td>`;
}

/** A row's own attributes: its id, for tests and links to find it. */
const byId = (row) => ({ 'data-id': row.id });

/**
 * `rows` in a table of `columns`, each {title, cell(row)} and optionally `amount` (right-aligned,
 * header too), `className` (its cells'), `hidden` (a header only screen readers read, as for a
 * row's actions) or `rowHeader` (its cell heads the row). A falsy column is left out: a column
 * only some roles see is written `canWrite && {...}`. `rowProps(row)` gives each <tr> its
 * attributes (`data-id` unless told). `label` names the wrapper as a region the keyboard can
 * reach and scroll, for a table with no link in it to take the focus; `tableLabel` names the
 * table itself. With `empty`, no rows show that sentence instead of an empty table.
 */
export function Table({ id, label, tableLabel, columns, rows, rowProps = byId, empty, foot }) {
  if (empty && rows.length === 0) return html`<${Empty}>${empty}<//>`;
  const shown = columns.filter(Boolean);
  const region = label ? { tabindex: '0', role: 'region', 'aria-label': label } : {};
  return html`<div class="table-wrap" ...${region}>
    <table id=${id} aria-label=${tableLabel}>
      <thead>
        <tr>
          ${shown.map((column) => html`<${Head} column=${column} />`)}
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (row) =>
            html`<tr ...${rowProps(row)}>
              ${shown.map((column) => html`<${Cell} column=${column} row=${row} />`)}
            </tr>`,
        )}
      </tbody>
      ${foot}
    </table>
  </div>`;
}

/**
 * One page of a list as `useLoad` holds it (`page`): the refusal if any, `what` ("Loading
 * payouts") while it loads, its rows in a `Table` (the other props), and the `Pager` (`param`,
 * `prefix`). `quiet` keeps the rows without the loading line whenever rows are already
 * shown (a reload after an action, a page turned).
 */
export function PagedTable({ page, what, quiet, param, prefix, ...table }) {
  return html`<${ErrorNote} error=${page.error} />
    ${page.loading && !(quiet && page.data) && html`<${Loading} what=${what} />`}
    ${page.data && html`<${Table} rows=${page.data.data} ...${table} />`}
    <${Pager} page=${page.data} param=${param} prefix=${prefix} />`;
}
