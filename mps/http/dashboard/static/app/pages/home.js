// Home: balances per currency, volume and count over a chosen range (one chart per currency),
// recent payments, and what needs the member's attention, each from the API and each shown only
// when the member's role may read it.
import { html } from 'htm/preact';
import { useMemo } from 'preact/hooks';
import { api } from '../api.js';
import { Chart } from '../chart.js';
import { daysAgo, isoDate, label, major, money } from '../format.js';
import { setQuery, useLocation } from '../router.js';
import { Table } from '../table.js';
import { Card, Empty, ErrorNote, Loading, useLoad } from '../ui.js';
import { useBalances } from './balance.js';
import { PAYMENTS } from './payments.js';

const RANGES = [
  ['7', 'Last 7 days'],
  ['30', 'Last 30 days'],
  ['90', 'Last 90 days'],
];

function Balances() {
  const { shown, loaded } = useBalances();
  return html`<${Card} title="Balance" id="balances">
    ${loaded}
    <div class="grid">
      ${
        shown &&
        shown.map(
          (b) =>
            html`<div class="balance" data-currency=${b.currency}>
              <div class="muted small">${b.currency} available</div>
              <div class="figure">${money(b.availableMinor, b.currency)}</div>
              <div class="muted small">Pending ${money(b.pendingMinor, b.currency)}</div>
            </div>`,
        )
      }
    </div>
  <//>`;
}

function Activity({ range }) {
  const from = daysAgo(Number(range) - 1);
  const to = isoDate(new Date());
  const activity = useLoad(
    () => api.get('/merchant/analytics', { from, to, interval: 'day' }),
    [from, to],
  );
  const charts = useMemo(() => {
    if (!activity.data) return [];
    return activity.data.data.map((c) => ({
      currency: c.currency,
      dates: c.series.map((p) => Date.parse(p.date) / 1000),
      volume: c.series.map((p) => major(p.revenueMinor, c.currency)),
      count: c.series.map((p) => p.paymentCount),
      totalMinor: c.series.reduce((sum, p) => sum + BigInt(p.revenueMinor), 0n).toString(),
      totalCount: c.series.reduce((sum, p) => sum + p.paymentCount, 0),
    }));
  }, [activity.data]);
  return html`<${Card} title="Activity" id="activity">
    <div class="row">
      <label>
        Range
        <select
          id="range"
          value=${range}
          onChange=${(e) => setQuery({ range: e.currentTarget.value })}
        >
          ${RANGES.map(([value, text]) => html`<option value=${value}>${text}</option>`)}
        </select>
      </label>
    </div>
    <${ErrorNote} error=${activity.error} />
    ${activity.loading && html`<${Loading} />`}
    ${activity.data && charts.length === 0 && html`<${Empty}>No payments in this range.<//>`}
    ${charts.map(
      (c) =>
        html`<div class="currency-activity" data-currency=${c.currency}>
          <h3>${c.currency}</h3>
          <div class="grid">
            <${Chart}
              id=${`volume-${c.currency}`}
              title=${`Volume, ${c.currency}`}
              dates=${c.dates}
              values=${c.volume}
              format=${(v) => (v == null ? '' : v.toLocaleString('en-US'))}
              summary=${`Volume in ${c.currency}: ${money(c.totalMinor, c.currency)} in total`}
            />
            <${Chart}
              id=${`count-${c.currency}`}
              title=${`Payments, ${c.currency}`}
              dates=${c.dates}
              values=${c.count}
              format=${(v) => (v == null ? '' : String(v))}
              whole=${true}
              summary=${`${c.totalCount} ${c.currency} payments in total`}
            />
          </div>
        </div>`,
    )}
  <//>`;
}

function RecentPayments() {
  const recent = useLoad(() => api.get('/merchant/payments', { limit: 5 }), []);
  return html`<${Card} title="Recent payments" id="recent">
    <${ErrorNote} error=${recent.error} />
    ${recent.loading && html`<${Loading} />`}
    ${recent.data && html`<${Table} rows=${recent.data.data} ...${PAYMENTS} />`}
    <p><a href="/dashboard/payments">All payments</a></p>
  <//>`;
}

async function whatNeedsMe(member) {
  const can = (scope) => member.scopes.includes(scope);
  const asks = [];
  if (can('team:read')) {
    asks.push(
      api.get('/team/approvals/requests', { awaitingMyVote: true, limit: 100 }).then((page) =>
        page.data.map((r) => ({
          kind: 'approval',
          text: `Approval waiting for your vote: ${label(r.action)} (${r.id})`,
        })),
      ),
    );
  }
  if (can('settings:read')) {
    asks.push(
      api.get('/merchant/webhooks', { limit: 100 }).then((page) =>
        page.data
          .filter((e) => e.status !== 'enabled')
          .map((e) => ({
            kind: 'webhook',
            text: `Webhook endpoint ${e.url} is disabled${e.disabledReason ? `: ${e.disabledReason}` : ''}`,
          })),
      ),
    );
    asks.push(
      api
        .get('/merchant/kyc')
        .then((kyc) =>
          kyc.status === 'VERIFIED'
            ? []
            : [{ kind: 'kyc', text: `Identity verification: ${label(kyc.status)}` }],
        ),
    );
  }
  if (can('invoices:read')) {
    asks.push(
      api.get('/merchant/invoices', { status: 'OVERDUE', limit: 20 }).then((page) =>
        page.data.map((i) => ({
          kind: 'invoice',
          text: `Invoice ${i.invoiceNumber} is overdue: ${money(i.amountMinor, i.currency)}`,
        })),
      ),
    );
  }
  return (await Promise.all(asks)).flat();
}

function NeedsMe({ member }) {
  const tasks = useLoad(() => whatNeedsMe(member), []);
  return html`<${Card} title="Needs you" id="needs-me">
    <${ErrorNote} error=${tasks.error} />
    ${tasks.loading && html`<${Loading} />`}
    ${tasks.data && tasks.data.length === 0 && html`<${Empty}>Nothing needs you right now.<//>`}
    ${
      tasks.data &&
      tasks.data.length > 0 &&
      html`<ul>
        ${tasks.data.map((t) => html`<li data-kind=${t.kind}>${t.text}</li>`)}
      </ul>`
    }
  <//>`;
}

export function Home({ member }) {
  const { query } = useLocation();
  const range = RANGES.some(([v]) => v === query.get('range')) ? query.get('range') : '30';
  const can = (scope) => member.scopes.includes(scope);
  return html`<h1>Home</h1>
    ${can('payouts:read') && html`<${Balances} />`}
    ${can('analytics:read') && html`<${Activity} range=${range} />`}
    <${NeedsMe} member=${member} />
    ${can('payments:read') && html`<${RecentPayments} />`}`;
}
