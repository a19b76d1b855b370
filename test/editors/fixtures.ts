// What the editors' specs share: a fixture that opens the host page (with the
// spec's initial state), the steps a person takes in Grafana's controls, and
// the recording of every emission into JOBSIGHT_EDITOR_OUT for the Go test
// (editors_test.go), which decodes each one in the Go models.
import fs from 'fs';
import path from 'path';
import { expect, Locator, Page, test as base, TestInfo } from '@playwright/test';

import type { Checkpoint, EditorName, Emission, PageGlobals, PageInit, ResourceCall } from './page/protocol';

export { expect };

type Globals = Window & PageGlobals;

/** One emission as written for the Go test: a file per emission. */
export interface EmissionFile extends Emission {
  /** The spec's case: file and title. */
  case: string;
  checkpoints?: Array<Pick<Checkpoint, 'label' | 'expectError'>>;
}

/** A file-name-safe form of a title. */
const slug = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 120)
    .replace(/^-|-$/g, '');

/** Writes every emission of a case, with the checkpoints on it, into dir: <editor>--<case>--<seq>.json. */
function writeEmissions(dir: string, info: TestInfo, emitted: Emission[], checkpoints: Checkpoint[]) {
  fs.mkdirSync(dir, { recursive: true });
  // titlePath: the file, the describe blocks, the test's title.
  const spec = path.basename(info.file, '.spec.ts');
  const title = info.titlePath.slice(1).join(' › ');
  const caseName = `${spec}: ${title}`;
  const caseSlug = `${slug(spec)}--${slug(title)}`;
  for (const e of emitted) {
    const file: EmissionFile = { ...e, case: caseName };
    const marks = checkpoints
      .filter((c) => c.seq === e.seq)
      .map((c) => ({ label: c.label, ...(c.expectError ? { expectError: c.expectError } : {}) }));
    if (marks.length > 0) {
      file.checkpoints = marks;
    }
    const name = `${e.editor}--${caseSlug}--${String(e.seq).padStart(4, '0')}.json`;
    fs.writeFileSync(path.join(dir, name), JSON.stringify(file, null, 2) + '\n');
  }
}

/**
 * The host page with the steps a person takes in it. Locators are found the
 * way a person finds things: by a field's label within an editor's section,
 * by a button's text, by an option's text in the open menu.
 */
export class EditorsPage {
  constructor(readonly page: Page) {}

  /** An editor's section of the page. */
  section(editor: EditorName): Locator {
    return this.page.getByTestId(`${editor}-editor`);
  }

  /** A field by its label (exact; a required field's has " *" after it) within a section or a part of it. */
  field(scope: Locator, label: string): Locator {
    return scope.getByLabel(new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}( \\*)?$`));
  }

  /** A group of fields (a Grafana FieldSet) by its legend. */
  group(name: string): Locator {
    return this.section('config').getByRole('group', { name, exact: true });
  }

  /**
   * The option of the open select menu whose label is text (Grafana 11.1 and
   * later mark options with this test id; before, an aria-label).
   */
  option(text: string): Locator {
    return this.page
      .getByTestId('data-testid Select option')
      .filter({ has: this.page.getByText(text, { exact: true }) });
  }

  /**
   * Opens a select and picks options by their labels, reopening it between
   * picks where it closed; then moves on (Tab) as a person leaving the field.
   */
  async choose(select: Locator, ...options: string[]) {
    for (const text of options) {
      const option = this.option(text);
      if (!(await option.isVisible())) {
        await this.openSelect(select);
      }
      await option.click();
    }
    await this.closeMenu(select);
  }

  /** Types a value the lists do not offer into a select that takes one, and adds it with Enter. */
  async typeValue(select: Locator, value: string) {
    await this.openSelect(select);
    await this.page.keyboard.type(value);
    await expect(this.page.getByText('Hit enter to add')).toBeVisible();
    await this.page.keyboard.press('Enter');
    await this.closeMenu(select);
  }

  /**
   * Opens a select's menu, the field scrolled to the middle of the window
   * first as a person would: Grafana 12 and later draw the menu below the
   * field (fixed, in a portal), out of reach under a field at the bottom edge.
   */
  async openSelect(select: Locator) {
    await select.evaluate((el) => el.scrollIntoView({ block: 'center' }));
    await select.click();
  }

  /** Closes a select's menu if it is open, as a person does with Escape. */
  async closeMenu(select: Locator) {
    if (await this.page.getByLabel('Select options menu').isVisible()) {
      await select.press('Escape');
    }
    await expect(this.page.getByLabel('Select options menu')).toBeHidden();
  }

  /**
   * A chosen value of a multi-value select: its chip (the value and its ×).
   * Grafana 12 and later name every chip's × just "Remove", so the chip is
   * found by its text.
   */
  chip(scope: Locator, value: string): Locator {
    return scope.getByText(value, { exact: true }).locator('xpath=..').filter({ has: this.page.getByRole('button') });
  }

  /** Removes a chosen value of a multi-value select (its chip's ×). */
  async removeValue(scope: Locator, value: string) {
    await this.chip(scope, value).getByRole('button', { name: /^Remove/ }).click();
  }

  /**
   * Empties a select with its clear button (the × inside the select; Grafana
   * 12 and later call it "Clear value").
   */
  async clearSelect(select: Locator) {
    await select
      .locator('xpath=ancestor::*[.//*[@aria-label="Clear value"]][1]')
      .getByRole('button', { name: 'Clear value', exact: true })
      .click();
  }

  /** Clicks into a text field, types text key by key and tabs away. */
  async type(input: Locator, text: string) {
    await input.click();
    await input.pressSequentially(text);
    await input.press('Tab');
  }

  /** Clicks into a text field, pastes text at once and tabs away. */
  async paste(input: Locator, text: string) {
    await input.click();
    await this.page.keyboard.insertText(text);
    await input.press('Tab');
  }

  /** Clears a text field as a person does (select all, delete) and tabs away. */
  async clear(input: Locator) {
    await input.click();
    await input.press('ControlOrMeta+a');
    await input.press('Backspace');
    await input.press('Tab');
  }

  /**
   * Flips an InlineSwitch: clicks the switch drawn by the label right after
   * its (hidden) checkbox, as a person clicks it. The field's own label points
   * at the same id, and Grafana 12 and later no longer name the switch's.
   */
  async toggle(scope: Locator, id: string) {
    await scope.locator(`input[id="${id}"] + label[for="${id}"]`).click();
  }

  /** The latest value an editor holds, from the page's JSON view. */
  async json<T = Record<string, unknown>>(editor: EditorName): Promise<T> {
    return JSON.parse(await this.page.getByTestId(`${editor}-json`).innerText()) as T;
  }

  /** Marks the editor's latest emission for the Go test: valid, or invalid with expectError. */
  async checkpoint(editor: EditorName, label: string, expectError?: string): Promise<Checkpoint> {
    return this.page.evaluate(
      ([e, l, x]) => (window as unknown as Globals).__checkpoint(e as EditorName, l as string, x),
      [editor, label, expectError] as const
    );
  }

  async emitted(): Promise<Emission[]> {
    return this.page.evaluate(() => (window as unknown as Globals).__emitted);
  }

  async resourceCalls(): Promise<ResourceCall[]> {
    return this.page.evaluate(() => (window as unknown as Globals).__resourceCalls);
  }

  /** How many times the QueryEditor asked for the query to run. */
  async runs(): Promise<number> {
    return Number(await this.page.getByTestId('query-runs').innerText());
  }
}

/**
 * The specs' test: `editors` is the host page, opened with `init` (set per
 * describe with test.use({ init })). After each test every emission is
 * written to JOBSIGHT_EDITOR_OUT (when set), and the test fails on a page
 * error, a console error, or a call to Grafana's backendSrv.
 */
export const test = base.extend<{ init: PageInit; editors: EditorsPage }>({
  init: [{}, { option: true }],
  editors: async ({ page, init }, use, testInfo) => {
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      // Grafana's global styles (12 and later) load its web fonts from
      // public/fonts/, which a Grafana server serves and no npm package
      // ships: the page draws with fallback fonts, and those misses are not
      // the editors' errors.
      const fontMiss = new URL(m.location().url || 'about:blank').pathname.startsWith('/public/fonts/');
      if (m.type() === 'error' && !fontMiss) {
        problems.push(`console error: ${m.text()}${m.location().url ? ` (${m.location().url})` : ''}`);
      }
    });
    await page.addInitScript((i) => {
      (window as unknown as Globals).__JOBSIGHT_EDITORS__ = i;
    }, init);
    await page.goto('/');
    await page.waitForFunction(() => (window as unknown as Globals).__ready === true);
    // The page built against compat/grafana13 must run React 19, the main one React 18.
    const react = await page.evaluate(() => (window as unknown as Globals).__reactVersion);
    const major = (process.env.JOBSIGHT_EDITOR_DIST ?? 'dist') === 'dist-grafana13' ? '19' : '18';
    expect(react?.split('.')[0], `the React the host page runs (${react})`).toBe(major);

    await use(new EditorsPage(page));

    const { emitted, checkpoints, unexpected } = await page.evaluate(() => {
      const w = window as unknown as Globals;
      return { emitted: w.__emitted, checkpoints: w.__checkpoints, unexpected: w.__unexpected };
    });
    const out = process.env.JOBSIGHT_EDITOR_OUT;
    if (out) {
      writeEmissions(out, testInfo, emitted, checkpoints);
    }
    expect(unexpected, 'calls to the fake backendSrv (no editor should talk to Grafana directly)').toEqual([]);
    expect(problems, 'errors in the page').toEqual([]);
  },
});
