// End-to-end test of the web UI in headless Chromium, against a running
// `converge dev` that scripts/test-ui.sh seeded with landing zones: "demo"
// (Ready) and "broken" (Failed: vpc/broken-vpc-1 fails terminally; its spec
// has two generations).
//
//   CONVERGE_UI_URL  the server's base URL (required)
//   CHROMIUM         the Chromium executable (required)
//   UI_ARTIFACTS     where screenshots go (default /tmp/converge-ui-artifacts)

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const base = process.env.CONVERGE_UI_URL;
const executablePath = process.env.CHROMIUM;
const artifacts = process.env.UI_ARTIFACTS || '/tmp/converge-ui-artifacts';
if (!base || !executablePath) {
  throw new Error('set CONVERGE_UI_URL and CHROMIUM (scripts/test-ui.sh does)');
}
mkdirSync(artifacts, { recursive: true });

let browser;
let page;
const consoleErrors = [];

before(async () => {
  browser = await chromium.launch({
    executablePath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(15000);
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  // Name the URL of every failed request: the console says only its status.
  page.on('response', (r) => {
    if (r.status() >= 400) consoleErrors.push(`${r.status()} ${new URL(r.url()).pathname}`);
  });
});

after(async () => {
  await browser?.close();
});

const shot = (name) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });

async function signIn(tok) {
  await page.fill('#token', tok);
  await page.click('#auth button[type="submit"]');
}

test('an anonymous caller is refused and a token signs in', async () => {
  await page.goto(`${base}/`);
  await page.locator('#whoami .error-inline').waitFor();
  assert.match(await page.locator('#whoami').textContent(), /anonymous caller/);
  await signIn('tok-viewer');
  await page.waitForFunction(() => /ui\/viewer · reader/.test(document.querySelector('#whoami').textContent));
});

test('the list shows counts by phase and filters by kind', async () => {
  const failed = page.locator('[data-phase-count="Failed"] .n');
  await failed.waitFor();
  await page.waitForFunction(() => Number(document.querySelector('[data-phase-count="Failed"] .n')?.textContent) >= 2);
  const ready = Number(await page.locator('[data-phase-count="Ready"] .n').textContent());
  assert.ok(ready >= 10, `Ready count ${ready}, want at least the demo zone's 10 resources`);
  await page.locator('table.resources tbody tr').first().waitFor();
  await shot('01-resources');

  await page.locator('select[name="kind"] option[value="landingzone"]').waitFor({ state: 'attached' });
  await page.selectOption('select[name="kind"]', 'landingzone');
  await page.click('form.filters button[type="submit"]');
  await page.waitForURL(/kind=landingzone/);
  await page.locator('tr[data-ref="default/landingzone/broken"]').waitFor();
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('table.resources tbody tr')];
    return rows.length === 2 && rows.every((r) => r.dataset.ref.startsWith('default/landingzone/'));
  });
  // Only the broken zone's root is a Failed landingzone.
  await page.waitForFunction(() => document.querySelector('[data-phase-count="Failed"] .n')?.textContent === '1');
  await shot('02-filtered-by-kind');
});

test('a failing composite shows its culprit and the path to it', async () => {
  await page.click('tr[data-ref="default/landingzone/broken"] a');
  await page.waitForURL(/\/resources\/default\/landingzone\/broken$/);
  await page.locator('svg.graph').waitFor();
  const culprit = page.locator('svg.graph g.node.culprit');
  // The seeding's last apply may still be settling: the page follows it.
  await culprit.waitFor();
  assert.equal(await culprit.count(), 1, 'one culprit node');
  assert.equal(await culprit.getAttribute('data-ref'), 'default/vpc/broken-vpc-1');
  assert.equal(await culprit.getAttribute('data-phase'), 'Failed');
  const rootNode = page.locator('svg.graph g.node.root');
  assert.match(await rootNode.getAttribute('class'), /\bon-path\b/, 'the composite is on the culprit path');
  const pathEdge = page.locator('svg.graph g.edge.on-path[data-from="default/landingzone/broken"][data-to="default/vpc/broken-vpc-1"]');
  assert.equal(await pathEdge.count(), 1, 'the edge from the composite to the culprit is highlighted');
  // Healthy nodes are not highlighted.
  assert.doesNotMatch(await page.locator('svg.graph g.node[data-ref="default/vpc/broken-vpc-0"]').getAttribute('class'), /on-path|culprit/);
  // Value flows are drawn on the dependency edges.
  const flow = page.locator('svg.graph g.edge.dependency[data-from="default/account/broken-acct-0"][data-to="default/vpc/broken-vpc-0"] text.flow');
  assert.match(await flow.textContent(), /account_id/);
  await page.locator('[data-culprit="default/vpc/broken-vpc-1"]').waitFor();
  // Its management policy is its kind's, full; it imports nothing.
  assert.equal(await page.locator('[data-field="management"]').textContent(), "full (the kind's)");
  assert.equal(await page.locator('[data-field="import"]').count(), 0, 'no import line for a resource that imports nothing');
  // A reader may not act on it: the buttons are greyed out.
  assert.equal(await page.locator('button[data-action="reconcile"]').isDisabled(), true, 'reconcile is disabled for a reader');
  assert.equal(await page.locator('button[data-action="quarantine"]').isDisabled(), true, 'quarantine is disabled for a reader');
  await shot('03-failing-composite');
});

test('history shows diffs and rollback makes a new generation', async () => {
  await page.click('#history summary');
  await page.locator('.revision[data-generation="2"] pre.diff .add').first().waitFor();
  let rollback = page.locator('button[data-rollback="1"]');
  await rollback.waitFor();
  assert.equal(await rollback.isDisabled(), true, 'rollback is disabled for a reader');
  await signIn('tok-admin');
  await page.waitForFunction(() => /ui\/admin · admin/.test(document.querySelector('#whoami').textContent));
  // Signing in re-renders the page after the identity shows; the history
  // section of the new page starts closed. Clicking before that would
  // toggle the old page's section.
  await page.waitForFunction(() => document.querySelector('#history')?.open === false);
  await page.click('#history summary');
  rollback = page.locator('button[data-rollback="1"]');
  await page.waitForFunction(() => document.querySelector('button[data-rollback="1"]')?.disabled === false);
  await shot('04-history');
  page.once('dialog', (d) => d.accept());
  await rollback.click();
  await page.locator('.revision[data-generation="3"]').waitFor();
  await page.waitForFunction(() => /^3 /.test(document.querySelector('[data-field="generation"]')?.textContent || ''));
  await shot('05-rolled-back');
});

test('the task timeline shows the resource\'s task records', async () => {
  await page.click('#tasks summary');
  // Pin one record by id: the rollback's reconciles add newer ones above it.
  const first = page.locator('.task-record[data-outcome="applied"]').first();
  await first.waitFor();
  const id = await first.getAttribute('data-id');
  const rec = page.locator(`.task-record[data-id="${id}"]`);
  assert.match(await rec.textContent(), /generation \d+ · attempt 1/);
  await rec.locator('.rev-head').click();
  // The page may draw the timeline again meanwhile; the record stays open.
  await page.waitForFunction((i) =>
    /"spec"/.test(document.querySelector(`.task-record[data-id="${i}"] .task-detail`)?.textContent || ''), id);
  await shot('06-tasks');
});

test('kinds and cluster pages render', async () => {
  await page.click('a[data-nav="kinds"]');
  await page.locator('tr[data-kind="vpc/1"]').waitFor();
  await page.click('tr[data-kind="landingzone/1"] a');
  await page.locator('table.schema').first().waitFor();
  assert.match(await page.locator('table.schema').first().textContent(), /prefix/);
  await shot('06-kind');
  await page.click('a[data-nav="cluster"]');
  await page.locator('section.member table.served').first().waitFor();
  await shot('07-cluster');
  // The anonymous first load logged its refusals; nothing else may fail.
  const unexpected = consoleErrors.filter((e) => !/status of 403|^403 \/api\/v1\//.test(e));
  assert.deepEqual(unexpected, [], 'no other errors in the browser console');
});

test('the list follows the Watch stream without a reload', async () => {
  await page.goto(`${base}/?kind=landingzone`);
  await page.locator('tr[data-ref="default/landingzone/broken"]').waitFor();
  await page.waitForFunction(() => document.querySelector('.live')?.classList.contains('on'));
  const before = await page.evaluate(() => document.querySelector('.counts .total').textContent);
  let navigations = 0;
  page.on('framenavigated', () => navigations++);
  // Another client creates a zone: the row and the counts appear by themselves.
  const res = await fetch(`${base}/api/v1/resources`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer tok-admin' },
    body: JSON.stringify({ kind: 'landingzone', kind_version: 1, name: 'live', spec: { prefix: 'live', accounts: 1 } }),
  });
  assert.equal(res.status, 200, await res.text());
  await page.locator('tr[data-ref="default/landingzone/live"]').waitFor();
  await page.waitForFunction((t) => document.querySelector('.counts .total').textContent !== t, before);
  // And its phase changes in place as its children converge.
  await page.waitForFunction(() =>
    document.querySelector('tr[data-ref="default/landingzone/live"] .phase-cell')?.textContent === 'Ready');
  assert.equal(navigations, 0, 'the page was not reloaded');
  await shot('08-live');
});

test('a spec change is planned down to the children, then applied as planned', async () => {
  await page.goto(`${base}/resources/default/landingzone/demo`);
  await page.waitForFunction(() => /ui\/admin · admin/.test(document.querySelector('#whoami').textContent));
  await page.locator('[data-field="phase"]').waitFor();
  const gen = Number((await page.locator('[data-field="generation"]').textContent()).split(' ')[0]);
  await page.click('#change-spec summary');
  await page.waitForFunction(() => /"accounts": 3/.test(document.querySelector('textarea.spec-edit').value));
  await page.fill('textarea.spec-edit', JSON.stringify({ prefix: 'demo', accounts: 4 }, null, 2));
  await page.click('button[data-action="plan"]');
  // The landing zone's composer (a Go worker) previewed the change.
  await page.locator('[data-plan-composite="landingzone/demo"] li[data-child="account/demo-acct-3"][data-action="create"]').waitFor();
  assert.equal(await page.locator('[data-plan-composite="landingzone/demo"] li[data-child="account/demo-acct-0"]').getAttribute('data-action'), 'unchanged');
  assert.match(await page.locator('[data-field="plan-totals"]').textContent(), /Plan: 3 to create, 0 to update, 0 to prune/);
  // Nothing changed yet.
  assert.equal(Number((await page.locator('[data-field="generation"]').textContent()).split(' ')[0]), gen);
  await shot('09-plan');
  await page.click('button[data-action="apply-plan"]');
  await page.locator('.plan-out .ok').waitFor();
  await page.waitForFunction((g) => Number(document.querySelector('[data-field="generation"]')?.textContent.split(' ')[0]) === g + 1, gen);
});

test('a kind version shows its rollout, wave by wave, and an owner pauses it', async () => {
  await page.goto(`${base}/kinds/note/2`);
  const rollout = page.locator('.rollout[data-state="running"]');
  await rollout.waitFor();
  assert.equal(await rollout.locator('tr[data-wave]').count(), 2, 'two waves');
  await rollout.locator('tr[data-wave="1"][data-state="moving"]').waitFor();
  assert.match(await rollout.locator('tr[data-wave="1"]').textContent(), /0\/2 ready.*2 moving/);
  assert.equal(await rollout.locator('tr[data-wave="2"]').getAttribute('data-state'), 'pending');
  await shot('10-rollout');
  await rollout.locator('button[data-rollout-action="pause"]').click();
  await page.locator('.rollout[data-state="paused"]').waitFor();
});
