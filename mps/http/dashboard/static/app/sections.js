// The dashboard's sections, in the order the navigation shows them. A section appears only when
// it is built and the member's role holds its read scope (`scope`); README.md beside the
// dashboard package says how to add one.
import { Home } from './pages/home.js';
import { NewPayment } from './pages/new-payment.js';
import { PaymentDetail } from './pages/payment.js';
import { Payments } from './pages/payments.js';
import { Search } from './pages/search.js';
// Balance, Payouts, Team, Approvals and the audit trail
import { Approvals } from './pages/approvals.js';
import { Audit } from './pages/audit.js';
import { Balance } from './pages/balance.js';
import { Payouts } from './pages/payouts.js';
import { Team } from './pages/team.js';
// Customers, Invoices and Cards
import { CardDetail } from './pages/card.js';
import { Cards, IssueCard } from './pages/cards.js';
import { CustomerDetail, Customers } from './pages/customers.js';
import { InvoiceDetail } from './pages/invoice.js';
import { Invoices, NewInvoice } from './pages/invoices.js';
// Developers and Settings
import { Developers } from './pages/developers.js';
import { EventDetail, Events } from './pages/events.js';
import { ApiKeys } from './pages/keys.js';
import { Settings } from './pages/settings.js';
import { WebhookDetail, Webhooks } from './pages/webhooks.js';

export const SECTIONS = [
  { name: 'Home', href: '/dashboard', scope: null },
  { name: 'Payments', href: '/dashboard/payments', scope: 'payments:read' },
  { name: 'Customers', href: '/dashboard/customers', scope: 'customers:read' },
  { name: 'Invoices', href: '/dashboard/invoices', scope: 'invoices:read' },
  { name: 'Cards', href: '/dashboard/cards', scope: 'cards:read' },
  { name: 'Balance', href: '/dashboard/balance', scope: 'payouts:read' },
  { name: 'Payouts', href: '/dashboard/payouts', scope: 'payouts:read' },
  { name: 'Team', href: '/dashboard/team', scope: 'team:read' },
  { name: 'Approvals', href: '/dashboard/approvals', scope: 'team:read' },
  { name: 'Audit trail', href: '/dashboard/audit', scope: 'audit:read' },
  { name: 'Developers', href: '/dashboard/developers', scope: 'settings:read' },
  { name: 'Settings', href: '/dashboard/settings', scope: 'settings:read' },
];

// Views by path under /dashboard; `scope` is what the view needs to be shown at all.
export const VIEWS = [
  { pattern: /^\/dashboard$/, view: Home, title: 'Home', scope: null },
  { pattern: /^\/dashboard\/payments$/, view: Payments, title: 'Payments', scope: 'payments:read' },
  {
    pattern: /^\/dashboard\/payments\/new$/,
    view: NewPayment,
    title: 'New payment link',
    scope: 'payments:write',
  },
  {
    pattern: /^\/dashboard\/payments\/([^/]+)$/,
    view: PaymentDetail,
    title: 'Payment',
    scope: 'payments:read',
  },
  { pattern: /^\/dashboard\/search$/, view: Search, title: 'Search', scope: null },
  // Customers, Invoices and Cards
  {
    pattern: /^\/dashboard\/customers$/,
    view: Customers,
    title: 'Customers',
    scope: 'customers:read',
  },
  {
    pattern: /^\/dashboard\/customers\/([^/]+)$/,
    view: CustomerDetail,
    title: 'Customer',
    scope: 'customers:read',
  },
  { pattern: /^\/dashboard\/invoices$/, view: Invoices, title: 'Invoices', scope: 'invoices:read' },
  {
    pattern: /^\/dashboard\/invoices\/new$/,
    view: NewInvoice,
    title: 'New invoice',
    scope: 'invoices:write',
  },
  {
    pattern: /^\/dashboard\/invoices\/([^/]+)$/,
    view: InvoiceDetail,
    title: 'Invoice',
    scope: 'invoices:read',
  },
  { pattern: /^\/dashboard\/cards$/, view: Cards, title: 'Cards', scope: 'cards:read' },
  {
    pattern: /^\/dashboard\/cards\/new$/,
    view: IssueCard,
    title: 'Issue a card',
    scope: 'cards:write',
  },
  {
    pattern: /^\/dashboard\/cards\/([^/]+)$/,
    view: CardDetail,
    title: 'Card',
    scope: 'cards:read',
  },
  { pattern: /^\/dashboard\/balance$/, view: Balance, title: 'Balance', scope: 'payouts:read' },
  { pattern: /^\/dashboard\/payouts$/, view: Payouts, title: 'Payouts', scope: 'payouts:read' },
  { pattern: /^\/dashboard\/team$/, view: Team, title: 'Team', scope: 'team:read' },
  { pattern: /^\/dashboard\/approvals$/, view: Approvals, title: 'Approvals', scope: 'team:read' },
  { pattern: /^\/dashboard\/audit$/, view: Audit, title: 'Audit trail', scope: 'audit:read' },
  // Developers and Settings
  {
    pattern: /^\/dashboard\/developers$/,
    view: Developers,
    title: 'Developers',
    scope: 'settings:read',
  },
  {
    pattern: /^\/dashboard\/developers\/api-keys$/,
    view: ApiKeys,
    title: 'API keys',
    scope: 'settings:read',
  },
  {
    pattern: /^\/dashboard\/developers\/webhooks$/,
    view: Webhooks,
    title: 'Webhooks',
    scope: 'settings:read',
  },
  {
    pattern: /^\/dashboard\/developers\/webhooks\/([^/]+)$/,
    view: WebhookDetail,
    title: 'Webhook endpoint',
    scope: 'settings:read',
  },
  {
    pattern: /^\/dashboard\/developers\/events$/,
    view: Events,
    title: 'Events',
    scope: 'settings:read',
  },
  {
    pattern: /^\/dashboard\/developers\/events\/([^/]+)$/,
    view: EventDetail,
    title: 'Event',
    scope: 'settings:read',
  },
  { pattern: /^\/dashboard\/settings$/, view: Settings, title: 'Settings', scope: 'settings:read' },
];
